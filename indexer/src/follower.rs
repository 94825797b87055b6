//! Following the chain: backfill in adaptive block ranges up to the recent window, then block by
//! block, checking each block's parent against the stored chain.
//!
//! * Below `head - window` (blocks reorgs do not reach in practice) whole ranges are read with
//!   one `eth_getLogs` each; the range shrinks when the node refuses it — to the range its error
//!   suggests when it names one, as Alchemy's and Infura's do — and doubles while answers are
//!   quick. Only blocks with Bursar logs, and each range's last block, are stored.
//! * In the window every block is stored, and a block whose parent is not the stored block
//!   before it is a reorg: the stored chain is walked back, block by block and as deep as it
//!   takes (never fatal), to the last block the node still has; everything above it is marked
//!   orphaned (kept as evidence, with the hash that replaced it) and read again from the new
//!   branch.
//! * A node whose head is behind the checkpoint (a lagging replica behind a load balancer) is
//!   waited for; that is not a reorg.
//!
//! Each batch — blocks, logs, checkpoint — is one database transaction.

use std::time::{Duration, Instant};

use alloy_primitives::{Address, B256};
use bursar_client::rpc::{BlockHeader, RpcError, RpcLog};
use bursar_client::Client;
use futures_util::{StreamExt, TryStreamExt};

use crate::decode::decode;
use crate::metrics::Metrics;
use crate::store::{BlockRow, LogRow, Store, StoreError};

/// How the follower paces itself.
#[derive(Clone, Debug)]
pub struct FollowConfig {
    /// The first block to read (the deploy block).
    pub start_block: u64,
    /// Recent blocks read one by one and checked for reorgs.
    pub window: u64,
    /// The largest block range asked of `eth_getLogs`.
    pub max_range: u64,
    /// How often to look for a new block once caught up.
    pub poll: Duration,
}

impl Default for FollowConfig {
    fn default() -> Self {
        FollowConfig {
            start_block: 0,
            window: 64,
            max_range: 10_000,
            poll: Duration::from_millis(500),
        }
    }
}

/// Why a step failed (the follower retries with backoff).
#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    /// The node.
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// The database.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The node answered something inconsistent (a log whose block it does not know).
    #[error("the node's answers disagree: {0}")]
    Inconsistent(String),
}

/// What a step did.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Stored blocks up to this one.
    Advanced(u64),
    /// Found a reorg: orphaned the blocks above this one.
    Reorged {
        /// The last block both chains share.
        fork: u64,
        /// Logs orphaned.
        orphaned: u64,
    },
    /// Nothing new.
    CaughtUp,
}

/// Follows one chain's Bursar contracts into one store.
pub struct Follower {
    client: Client,
    store: Store,
    chain_id: u64,
    contracts: crate::Contracts,
    config: FollowConfig,
    /// The current `eth_getLogs` range.
    range: u64,
    /// The checkpoint, as last written (the follower is its only writer); read from the
    /// store again after a failed step, whose write may or may not have landed.
    progress: tokio::sync::watch::Sender<Option<(u64, String)>>,
    /// Whether `progress` holds the store's checkpoint.
    loaded: bool,
    metrics: std::sync::Arc<Metrics>,
}

impl Follower {
    /// A follower of `contracts` (address, name) on `client`'s chain.
    pub fn new(
        client: Client,
        store: Store,
        chain_id: u64,
        contracts: crate::Contracts,
        config: FollowConfig,
    ) -> Self {
        let range = config.max_range.clamp(1, 1_000);
        Follower {
            client,
            store,
            chain_id,
            contracts,
            config,
            range,
            progress: tokio::sync::watch::channel(None).0,
            loaded: false,
            metrics: Default::default(),
        }
    }

    /// What it counts.
    pub fn metrics(&self) -> std::sync::Arc<Metrics> {
        self.metrics.clone()
    }

    /// The checkpoint as it moves (`(number, hash)` of the last block ingested).
    pub fn progress(&self) -> tokio::sync::watch::Receiver<Option<(u64, String)>> {
        self.progress.subscribe()
    }

    /// Steps until `stop` resolves: as fast as the node answers while behind, every `poll`
    /// once caught up, with doubling waits (up to 30 s) while the node or the database fails.
    pub async fn run(mut self, stop: impl std::future::Future<Output = ()>) {
        tokio::pin!(stop);
        let mut backoff = Duration::from_millis(250);
        loop {
            let step = self.step().await;
            let wait = match step {
                Ok(Step::CaughtUp) => self.config.poll,
                Ok(_) => {
                    backoff = Duration::from_millis(250);
                    Duration::ZERO
                }
                Err(e) => {
                    self.loaded = false;
                    Metrics::add(&self.metrics.step_errors, 1);
                    tracing::warn!(error = %e, retry_in = ?backoff, "indexing step failed");
                    let wait = backoff;
                    backoff = (backoff * 2).min(Duration::from_secs(30));
                    wait
                }
            };
            tokio::select! {
                _ = &mut stop => return,
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// One step: a backfill range, one block of the window, or a reorg.
    pub async fn step(&mut self) -> Result<Step, FollowError> {
        let head = self.client.block_number().await?;
        self.metrics
            .head
            .store(head, std::sync::atomic::Ordering::Relaxed);
        if !self.loaded {
            let stored = self.store.checkpoint().await?;
            self.moved_to(stored);
            self.loaded = true;
        }
        let checkpoint = self.progress.borrow().clone();
        let next = checkpoint
            .as_ref()
            .map_or(self.config.start_block, |(n, _)| n + 1);
        let safe_end = head.saturating_sub(self.config.window);
        if next <= head && next > safe_end {
            return self.follow(next, checkpoint.map(|(_, h)| h)).await;
        }
        // Before a range, or with nothing new: the node must still have the checkpoint's
        // block, or a reorg replaced it (in the window, each new block's parent is checked).
        if let Some((number, hash)) = &checkpoint {
            match self.header(*number).await? {
                Some(h) if h.hash.to_string() == *hash => {}
                Some(_) => return self.reorg(*number).await,
                // A lagging node that has not seen our checkpoint yet.
                None => return Ok(Step::CaughtUp),
            }
        }
        if next > head {
            return Ok(Step::CaughtUp);
        }
        self.backfill(next, safe_end).await
    }

    /// Reads `from..=` up to `limit` in one range (shrunk as the node asks).
    async fn backfill(&mut self, from: u64, limit: u64) -> Result<Step, FollowError> {
        let addresses: Vec<Address> = self.contracts.iter().map(|(a, _)| *a).collect();
        let (to, logs) = loop {
            let to = (from + self.range - 1).min(limit);
            let started = Instant::now();
            match self.client.logs(&addresses, from, Some(to)).await {
                Ok(logs) => {
                    // Quick and not huge: ask for more next time.
                    if started.elapsed() < Duration::from_secs(1) && logs.len() < 10_000 {
                        self.range = (self.range * 2).min(self.config.max_range);
                    }
                    break (to, logs);
                }
                Err(e) if self.range > 1 && is_range_error(&e) => {
                    let asked = to - from + 1;
                    self.range = suggested_range(&e)
                        .filter(|r| *r < asked)
                        .unwrap_or(asked / 2)
                        .max(1);
                    Metrics::add(&self.metrics.range_shrinks, 1);
                    tracing::info!(range = self.range, error = %e, "the node refused the range; shrinking");
                }
                Err(e) => return Err(e.into()),
            }
        };
        // Headers of the blocks with logs (for their time) and of the range's end (for the
        // checkpoint).
        let mut numbers: Vec<u64> = logs.iter().map(|l| l.block_number.to()).collect();
        numbers.push(to);
        numbers.sort_unstable();
        numbers.dedup();
        let this = &*self;
        let headers: Vec<BlockHeader> = futures_util::stream::iter(numbers)
            .map(|n| async move {
                this.header(n)
                    .await?
                    .ok_or_else(|| FollowError::Inconsistent(format!("block {n} is missing")))
            })
            .buffered(16)
            .try_collect()
            .await?;
        let mut rows = self.rows(&logs, &headers)?;
        self.attribute(&mut rows).await?;
        let blocks: Vec<BlockRow> = headers.iter().map(block_row).collect();
        let end = headers.last().expect("the range's end is among them");
        self.write(&blocks, &rows, (to, &end.hash.to_string()), to - from + 1)
            .await?;
        tracing::info!(from, to, events = rows.len(), "backfilled");
        Ok(Step::Advanced(to))
    }

    /// Reads block `number`, whose parent must be the checkpoint's block (`parent`).
    async fn follow(&mut self, number: u64, parent: Option<String>) -> Result<Step, FollowError> {
        let Some(header) = self.header(number).await? else {
            return Ok(Step::CaughtUp);
        };
        if let Some(parent) = parent {
            if header.parent_hash.to_string() != parent {
                return self.reorg(number - 1).await;
            }
        }
        let addresses: Vec<Address> = self.contracts.iter().map(|(a, _)| *a).collect();
        let logs = self.client.logs_in_block(&addresses, header.hash).await?;
        let mut rows = self.rows(&logs, std::slice::from_ref(&header))?;
        self.attribute(&mut rows).await?;
        let hash = header.hash.to_string();
        self.write(&[block_row(&header)], &rows, (number, &hash), 1)
            .await?;
        if !rows.is_empty() {
            tracing::info!(block = number, events = rows.len(), "indexed");
        }
        Ok(Step::Advanced(number))
    }

    /// The stored block at `from` is no longer the node's: walks back to the last block both
    /// have and orphans everything above it.
    async fn reorg(&mut self, from: u64) -> Result<Step, FollowError> {
        let mut replaced = Vec::new();
        let mut number = from;
        let fork = loop {
            let theirs = self.header(number).await?;
            let ours = self.store.canonical_block(number).await?;
            match (ours, &theirs) {
                (Some(ours), Some(theirs)) if ours.hash == theirs.hash.to_string() => {
                    break (number, ours.hash);
                }
                _ => {}
            }
            if let Some(theirs) = theirs {
                replaced.push((number, theirs.hash.to_string()));
            }
            if number <= self.config.start_block {
                // Nothing of ours survives: start over from the first block.
                let before = self.config.start_block.saturating_sub(1);
                let hash = self
                    .header(before)
                    .await?
                    .map_or(B256::ZERO.to_string(), |h| h.hash.to_string());
                break (before, hash);
            }
            number -= 1;
        };
        let orphaned = self
            .store
            .orphan_above((fork.0, &fork.1), &replaced)
            .await?;
        self.moved_to(Some((fork.0, fork.1.clone())));
        tracing::warn!(fork = fork.0, depth = from - fork.0, orphaned, "reorg");
        Ok(Step::Reorged {
            fork: fork.0,
            orphaned,
        })
    }

    /// Publishes the checkpoint the store now holds.
    fn moved_to(&self, checkpoint: Option<(u64, String)>) {
        if let Some((n, _)) = &checkpoint {
            self.metrics
                .indexed
                .store(*n, std::sync::atomic::Ordering::Relaxed);
        }
        self.progress.send_replace(checkpoint);
    }

    /// Stores a batch covering `blocks_covered` blocks, and counts it.
    async fn write(
        &self,
        blocks: &[BlockRow],
        rows: &[LogRow],
        checkpoint: (u64, &str),
        blocks_covered: u64,
    ) -> Result<(), StoreError> {
        let started = Instant::now();
        self.store.ingest(blocks, rows, checkpoint).await?;
        self.moved_to(Some((checkpoint.0, checkpoint.1.to_owned())));
        let m = &self.metrics;
        Metrics::add(&m.write_micros, started.elapsed().as_micros() as u64);
        Metrics::add(&m.writes, 1);
        Metrics::add(&m.blocks, blocks_covered);
        Metrics::add(&m.events, rows.len() as u64);
        let undecoded = rows.iter().filter(|r| r.event.is_none()).count();
        Metrics::add(&m.undecoded, undecoded as u64);
        Ok(())
    }

    async fn header(&self, number: u64) -> Result<Option<BlockHeader>, FollowError> {
        Ok(self.client.block(number).await?)
    }

    /// Gives receipt acknowledgements and provenance revocations the session of the receipt or
    /// record they name (their events name no session), found in this batch or in the store.
    async fn attribute(&self, rows: &mut [LogRow]) -> Result<(), StoreError> {
        const LINKS: [(&str, &str, &str); 2] = [
            ("ReceiptAcknowledged", "ReceiptRecorded", "receiptId"),
            ("ProvenanceRevoked", "ProvenanceRecorded", "recordId"),
        ];
        for i in 0..rows.len() {
            let Some((_, origin, field)) = LINKS
                .iter()
                .find(|(event, ..)| rows[i].event.as_deref() == Some(*event))
            else {
                continue;
            };
            let Some(id) = rows[i]
                .args
                .as_ref()
                .and_then(|a| a.get(*field))
                .and_then(|v| v.as_str())
                .map(str::to_owned)
            else {
                continue;
            };
            let in_batch = rows[..i].iter().rev().find(|r| {
                r.event.as_deref() == Some(*origin)
                    && r.args
                        .as_ref()
                        .and_then(|a| a.get(*field))
                        .and_then(|v| v.as_str())
                        == Some(id.as_str())
            });
            rows[i].session_id = match in_batch {
                Some(r) => r.session_id.clone(),
                None => self
                    .store
                    .logs(&crate::store::LogFilter {
                        event: Some((*origin).to_owned()),
                        args: vec![((*field).to_owned(), id)],
                        limit: 1,
                        ..Default::default()
                    })
                    .await?
                    .into_iter()
                    .next()
                    .and_then(|r| r.session_id),
            };
        }
        Ok(())
    }

    /// `logs` as rows, each with its block's time from `headers`.
    fn rows(&self, logs: &[RpcLog], headers: &[BlockHeader]) -> Result<Vec<LogRow>, FollowError> {
        logs.iter()
            .map(|l| {
                let header = headers
                    .iter()
                    .find(|h| h.hash == l.block_hash)
                    .ok_or_else(|| {
                        // The block changed between the two reads: the next step sees the reorg.
                        FollowError::Inconsistent(format!(
                            "log of block {} ({}) but that block is now another",
                            l.block_number, l.block_hash
                        ))
                    })?;
                let contract = self
                    .contracts
                    .iter()
                    .find(|(a, _)| *a == l.address)
                    .map_or("unknown", |(_, name)| name);
                let (event, args, decode_error) = match decode(&l.topics, &l.data) {
                    Some(Ok(d)) => (Some(d.event.to_owned()), Some(d.args), None),
                    Some(Err(e)) => (None, None, Some(e)),
                    None => (None, None, Some("unknown event".to_owned())),
                };
                if let Some(e) = &decode_error {
                    tracing::warn!(block = %l.block_number, tx = %l.transaction_hash, error = %e, "a log did not decode; stored raw");
                }
                let session_id = args
                    .as_ref()
                    .and_then(|a| a.get("sessionId"))
                    .and_then(|s| s.as_str())
                    .map(str::to_owned);
                Ok(LogRow {
                    chain_id: self.chain_id,
                    block_number: l.block_number.to(),
                    block_hash: l.block_hash.to_string(),
                    block_timestamp: header.timestamp.to(),
                    tx_hash: l.transaction_hash.to_string(),
                    log_index: l.log_index.to(),
                    address: format!("{:#x}", l.address),
                    contract: contract.to_owned(),
                    topics: l.topics.iter().map(|t| t.to_string()).collect(),
                    data: l.data.to_string(),
                    event,
                    args: args.map(serde_json::Value::Object),
                    decode_error,
                    session_id,
                    canonical: true,
                    orphaned_by: None,
                })
            })
            .collect()
    }
}

fn block_row(h: &BlockHeader) -> BlockRow {
    BlockRow {
        number: h.number.to(),
        hash: h.hash.to_string(),
        parent_hash: h.parent_hash.to_string(),
        timestamp: h.timestamp.to(),
    }
}

/// Whether the node refused an `eth_getLogs` for its range or its answer's size.
fn is_range_error(e: &RpcError) -> bool {
    let RpcError::Node { message, .. } = e else {
        return false;
    };
    let m = message.to_lowercase();
    [
        "range",
        "limit",
        "too many",
        "more than",
        "exceed",
        "too large",
    ]
    .iter()
    .any(|w| m.contains(w))
}

/// The block range a node's error suggests, as `[0xFROM, 0xTO]` (Alchemy, Infura).
fn suggested_range(e: &RpcError) -> Option<u64> {
    let RpcError::Node { message, .. } = e else {
        return None;
    };
    let inside = message.split_once('[')?.1.split_once(']')?.0;
    let (a, b) = inside.split_once(',')?;
    let parse = |s: &str| u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok();
    let (a, b) = (parse(a)?, parse(b)?);
    (b >= a).then(|| b - a + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(message: &str) -> RpcError {
        RpcError::Node {
            method: "eth_getLogs",
            code: -32005,
            message: message.into(),
            data: None,
        }
    }

    #[test]
    fn providers_range_hints_are_read() {
        let alchemy = node(
            "Log response size exceeded. You can make eth_getLogs requests with up to a 2K \
             block range and no limit on the response size, or you can request any block range \
             with a cap of 10K logs in the response. Based on your parameters, this block range \
             should work: [0x1e8480, 0x1e8c4f]",
        );
        assert!(is_range_error(&alchemy));
        assert_eq!(suggested_range(&alchemy), Some(0x1e8c4f - 0x1e8480 + 1));
        let infura =
            node("query returned more than 10000 results. Try with this block range [0x10, 0x1F].");
        assert_eq!(suggested_range(&infura), Some(16));
        let quicknode = node("eth_getLogs is limited to a 10000 range");
        assert!(is_range_error(&quicknode));
        assert_eq!(suggested_range(&quicknode), None);
        assert!(!is_range_error(&node("execution reverted")));
        assert_eq!(suggested_range(&node("backwards [0x20, 0x10]")), None);
    }
}
