//! The chain's event record (blocks added and removed, with their logs), the log index
//! kept in step with it, filters and `eth_getLogs`.

use super::*;

impl Chain {
    /// The logs of a block (its transactions must be indexed).
    pub(super) fn block_logs(&self, block: &Block, removed: bool) -> Vec<ChainLog> {
        self.block_logs_where(block, removed, |_| true)
    }

    /// The logs of `block` that satisfy `keep` (checked before anything is copied).
    pub(super) fn block_logs_where(
        &self,
        block: &Block,
        removed: bool,
        keep: impl Fn(&Log) -> bool,
    ) -> Vec<ChainLog> {
        let mut out = vec![];
        for (i, h) in block.transactions.iter().enumerate() {
            let Some(tx) = self.txs.get(h) else { continue };
            for l in tx.receipt.logs.iter().filter(|l| keep(&l.log)) {
                out.push(ChainLog {
                    log: l.log.clone(),
                    log_index: l.log_index,
                    block_number: block.number(),
                    block_hash: block.hash,
                    tx_hash: *h,
                    tx_index: i as u64,
                    removed,
                });
            }
        }
        out
    }

    pub(super) fn record(&mut self, block: Block, removed: bool) {
        let logs = self.block_logs(&block, removed);
        self.index_logs(&logs, removed);
        self.events.push(ChainEvent {
            block,
            removed,
            logs,
        });
        if let Some(f) = &self.on_event {
            f(self.event_count());
        }
    }

    /// Adds the logs of a block joining the canonical chain to the log index, or takes those of
    /// a block leaving it (always the newest) back out.
    pub(super) fn index_logs(&mut self, logs: &[ChainLog], removed: bool) {
        if removed {
            for l in logs.iter().rev() {
                self.log_index.remove(l.block_number, &l.log);
            }
            return;
        }
        let mut local = 0u32;
        for (i, l) in logs.iter().enumerate() {
            local = match i.checked_sub(1).map(|p| logs[p].tx_index) {
                Some(prev) if prev == l.tx_index => local + 1,
                _ => 0,
            };
            let pos = LogPos {
                block: l.block_number,
                tx: l.tx_index as u32,
                log: local,
            };
            self.log_index.add(pos, &l.log);
        }
    }

    /// The log at `pos` of the canonical chain, if it matches `f`'s address and topics.
    pub(super) fn indexed_log(&self, pos: LogPos, f: &LogFilter) -> Option<ChainLog> {
        let block = self.blocks.get(pos.block as usize)?;
        let hash = *block.transactions.get(pos.tx as usize)?;
        let tx = self.txs.get(&hash)?;
        let l = tx.receipt.logs.get(pos.log as usize)?;
        f.matches_log(&l.log).then(|| ChainLog {
            log: l.log.clone(),
            log_index: l.log_index,
            block_number: pos.block,
            block_hash: block.hash,
            tx_hash: hash,
            tx_index: u64::from(pos.tx),
            removed: false,
        })
    }

    /// Registers a callback run with the new event count whenever the chain records events
    /// (blocks added or removed). Used by the WebSocket server to wake subscribers.
    pub fn set_event_hook(&mut self, hook: impl Fn(usize) + Send + 'static) {
        self.on_event = Some(Box::new(hook));
    }

    /// Number of events recorded so far (a cursor for [`Chain::events_since`]).
    pub fn event_count(&self) -> usize {
        self.events_base + self.events.len()
    }

    /// Events recorded at or after `cursor` (those still kept, with
    /// `transaction_block_keeper`).
    pub fn events_since(&self, cursor: usize) -> &[ChainEvent] {
        let start = cursor.saturating_sub(self.events_base);
        self.events.get(start..).unwrap_or(&[])
    }

    /// Installs a filter that reports changes from now on; returns its id.
    pub fn new_filter(&mut self, kind: FilterKind) -> u64 {
        self.expire_filters();
        let id = self.next_filter_id;
        self.next_filter_id += 1;
        self.filters.insert(
            id,
            Filter {
                kind,
                cursor: self.event_count(),
                polled: std::time::Instant::now(),
            },
        );
        id
    }

    /// Uninstalls the filters nobody polled within [`ChainConfig::filter_timeout`].
    pub(super) fn expire_filters(&mut self) {
        let timeout = self.config.filter_timeout;
        self.filters.retain(|_, f| f.polled.elapsed() < timeout);
    }

    /// A live filter's criteria (`eth_getFilterLogs`; this does not count as a poll).
    pub fn filter(&self, id: u64) -> Option<&FilterKind> {
        self.filters
            .get(&id)
            .filter(|f| f.polled.elapsed() < self.config.filter_timeout)
            .map(|f| &f.kind)
    }

    /// Removes a filter (`eth_uninstallFilter`); returns whether it existed.
    pub fn uninstall_filter(&mut self, id: u64) -> bool {
        self.filters.remove(&id).is_some()
    }

    /// Changes since the last poll: new block hashes, or matching logs (removed ones with
    /// `removed: true`). `None` for an unknown id.
    pub fn filter_changes(&mut self, id: u64) -> Option<FilterChanges> {
        self.expire_filters();
        let f = self.filters.get_mut(&id)?;
        f.polled = std::time::Instant::now();
        let f = &self.filters[&id];
        let events = self.events_since(f.cursor);
        let out = match &f.kind {
            FilterKind::Blocks => FilterChanges::Blocks(
                events
                    .iter()
                    .filter(|e| !e.removed)
                    .map(|e| e.block.hash)
                    .collect(),
            ),
            FilterKind::Logs(lf) => FilterChanges::Logs(
                events
                    .iter()
                    .flat_map(|e| e.logs.iter().filter(|l| lf.matches(l)).cloned())
                    .collect(),
            ),
        };
        let end = self.event_count();
        self.filters.get_mut(&id).expect("present").cursor = end;
        Some(out)
    }

    /// Logs of the canonical chain matching `f` (`eth_getLogs`); open bounds are the head.
    pub fn logs(&self, f: &LogFilter) -> Vec<ChainLog> {
        let latest = self.block_number();
        let (from, to) = match f.block_hash {
            Some(h) => match self.block_by_hash(h) {
                Some(b) => (b.number(), b.number()),
                None => return vec![],
            },
            None => (
                f.from_block.unwrap_or(latest),
                f.to_block.unwrap_or(latest).min(latest),
            ),
        };
        if let Some(candidates) = self.log_index.candidates(f, from, to) {
            return candidates
                .into_iter()
                .filter_map(|pos| self.indexed_log(pos, f))
                .collect();
        }
        // No address or topic to narrow by: every block in range, blooms skipping none.
        let mut out = vec![];
        for n in from..=to {
            let Some(block) = self.blocks.get(n as usize) else {
                break;
            };
            if f.may_match(&block.header.logs_bloom) {
                out.extend(self.block_logs_where(block, false, |l| f.matches_log(l)));
            }
        }
        out
    }
}
