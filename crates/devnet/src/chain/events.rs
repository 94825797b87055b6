//! The chain's event record (blocks added and removed, with their logs), the log index
//! kept in step with it, filters and `eth_getLogs`.

use super::*;

impl Chain {
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
                self.view.log_index.remove(l.block_number, &l.log);
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
            self.view.log_index.add(pos, &l.log);
        }
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
                transactions: Default::default(),
            },
        );
        id
    }

    /// Uninstalls the filters nobody polled within [`ChainConfig::filter_timeout`].
    pub(super) fn expire_filters(&mut self) {
        let timeout = self.view.config.filter_timeout;
        self.filters.retain(|_, f| f.polled.elapsed() < timeout);
    }

    /// A live filter's criteria (`eth_getFilterLogs`; this does not count as a poll).
    pub fn filter(&self, id: u64) -> Option<&FilterKind> {
        self.filters
            .get(&id)
            .filter(|f| f.polled.elapsed() < self.view.config.filter_timeout)
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
        if matches!(f.kind, FilterKind::PendingTransactions) {
            return Some(FilterChanges::Transactions(
                std::mem::take(&mut f.transactions).into(),
            ));
        }
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
            FilterKind::PendingTransactions => unreachable!("answered above"),
        };
        let end = self.event_count();
        self.filters.get_mut(&id).expect("present").cursor = end;
        Some(out)
    }

    /// Tells the pending-transaction filters that `hash` entered the pool.
    pub(super) fn note_pending(&mut self, hash: B256) {
        for f in self.filters.values_mut() {
            if matches!(f.kind, FilterKind::PendingTransactions) {
                if f.transactions.len() == MAX_PENDING_HASHES {
                    f.transactions.pop_front();
                }
                f.transactions.push_back(hash);
            }
        }
    }
}
