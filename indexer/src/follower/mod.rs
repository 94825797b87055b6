//! Following the chain: backfill in adaptive block ranges up to the recent window, then block by
//! block, checking each block's parent against the stored chain.
//!
//! * Below `head - window` (blocks reorgs do not reach in practice) whole ranges are read with
//!   one `eth_getLogs` each, several at once (fetched, their blocks' headers read and their
//!   logs decoded on other tasks) and written in order. A range is sized to bring about
//!   [`TARGET_LOGS`] logs, judging by the last one's density, and shrinks when the node refuses
//!   it — to the range its error suggests when it names one, as Alchemy's and Infura's do. Only
//!   blocks with Bursar logs, and each range's last block, are stored.
//! * In the window every block is stored, and a block whose parent is not the stored block
//!   before it is a reorg: the stored chain is walked back, block by block and as deep as it
//!   takes (never fatal), to the last block the node still has; everything above it is marked
//!   orphaned (kept as evidence, with the hash that replaced it) and read again from the new
//!   branch.
//! * A node whose head is behind the checkpoint (a lagging replica behind a load balancer) is
//!   waited for; that is not a reorg.
//!
//! Each batch — blocks, logs, checkpoint — is one database transaction.
//!
//! This module is the state machine (which step comes next, backfill, the window, reorgs);
//! [`source`] reads the node, [`heads`] says when to look again, [`range`] sizes ranges,
//! [`attribution`] finds sessions in the store.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy_primitives::B256;
use bursar_client::rpc::{BlockHeader, RpcError};
use bursar_client::Client;

use crate::metrics::Metrics;
use crate::store::{BlockRow, LogRow, Store, StoreError};

mod attribution;
mod error;
mod heads;
mod range;
mod source;

pub use error::FollowError;
pub use range::TARGET_LOGS;

use heads::Heads;
use source::{block_row, Fetched, FetchedBlock, Source};

/// How the follower paces itself.
#[derive(Clone, Debug)]
pub struct FollowConfig {
    /// The first block to read (the deploy block).
    pub start_block: u64,
    /// Recent blocks read one by one and checked for reorgs.
    pub window: u64,
    /// The largest block range asked of `eth_getLogs`.
    pub max_range: u64,
    /// Backfill ranges fetched at once.
    pub in_flight: usize,
    /// How often to look for a new block once caught up.
    pub poll: Duration,
    /// A WebSocket endpoint whose `newHeads` wake the follower as each block arrives (it
    /// still reads over HTTP, and polls while the subscription is down).
    pub ws: Option<String>,
}

impl Default for FollowConfig {
    fn default() -> Self {
        FollowConfig {
            start_block: 0,
            window: 64,
            max_range: 10_000,
            in_flight: 4,
            poll: Duration::from_millis(500),
            ws: None,
        }
    }
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
    source: Arc<Source>,
    store: Store,
    config: FollowConfig,
    /// The block range the next backfill fetch asks for.
    range: u64,
    /// Backfill ranges being fetched, in block order.
    pipeline: VecDeque<Pending>,
    /// Blocks of the recent window being fetched, in order (each checked against its parent
    /// when its turn comes).
    ahead: VecDeque<(u64, BlockTask)>,
    /// The last block the backfill reads (below the recent window).
    backfill_to: u64,
    /// When the head was last read.
    head_read_at: Instant,
    /// The checkpoint, as last written (the follower is its only writer); read from the
    /// store again after a failed step, whose write may or may not have landed.
    progress: tokio::sync::watch::Sender<Option<(u64, String)>>,
    /// Whether `progress` holds the store's checkpoint.
    loaded: bool,
    metrics: Arc<Metrics>,
}

/// A backfill range being fetched.
struct Pending {
    from: u64,
    to: u64,
    task: tokio::task::JoinHandle<Result<Fetched, FollowError>>,
}

/// A block of the recent window being fetched (`None`: the node has no such block yet).
type BlockTask = tokio::task::JoinHandle<Result<Option<FetchedBlock>, FollowError>>;

impl Follower {
    /// A follower of `contracts` (address, name) on `client`'s chain.
    pub fn new(
        client: Client,
        store: Store,
        chain_id: u64,
        contracts: crate::contracts::Contracts,
        config: FollowConfig,
    ) -> Self {
        let metrics = Arc::<Metrics>::default();
        // One block first: the first answer tells the chain's density, and ranges double from there.
        let range = 1;
        Follower {
            source: Arc::new(Source {
                client,
                chain_id,
                addresses: contracts.iter().map(|(a, _)| *a).collect(),
                contracts,
                metrics: metrics.clone(),
            }),
            store,
            config,
            range,
            pipeline: VecDeque::new(),
            ahead: VecDeque::new(),
            backfill_to: 0,
            head_read_at: Instant::now(),
            progress: tokio::sync::watch::channel(None).0,
            loaded: false,
            metrics,
        }
    }

    /// What it counts.
    pub fn metrics(&self) -> Arc<Metrics> {
        self.metrics.clone()
    }

    /// The checkpoint as it moves (`(number, hash)` of the last block ingested).
    pub fn progress(&self) -> tokio::sync::watch::Receiver<Option<(u64, String)>> {
        self.progress.subscribe()
    }

    /// Steps until `stop` resolves: as fast as the node answers while behind, on each new
    /// head (with `ws`) or every `poll` once caught up, with doubling waits (up to 30 s) while
    /// the node or the database fails.
    pub async fn run(mut self, stop: impl std::future::Future<Output = ()>) {
        tokio::pin!(stop);
        let mut backoff = Duration::from_millis(250);
        let mut heads = Heads::new(self.config.ws.clone());
        self.read_tags().await;
        loop {
            let step = self.step().await;
            let wait = match step {
                Ok(Step::CaughtUp) => {
                    self.read_tags().await;
                    tokio::select! {
                        _ = &mut stop => return,
                        _ = heads.next(self.config.poll) => {}
                    }
                    Duration::ZERO
                }
                Ok(_) => {
                    backoff = Duration::from_millis(250);
                    Duration::ZERO
                }
                Err(e) => {
                    self.loaded = false;
                    self.stop_fetching();
                    Metrics::add(&self.metrics.step_errors, 1);
                    if matches!(e, FollowError::Rpc(_)) {
                        Metrics::add(&self.metrics.rpc_errors, 1);
                    }
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

    /// Reads the node's `safe` and `finalized` blocks (for the finality of what the API
    /// answers); a node without those tags leaves every block `latest`.
    async fn read_tags(&self) {
        let client = &self.source.client;
        let (safe, finalized) = tokio::join!(
            client.block_by_tag("safe"),
            client.block_by_tag("finalized")
        );
        let number =
            |r: Result<Option<BlockHeader>, RpcError>| r.ok().flatten().map(|h| h.number.to());
        self.metrics.set_tags(number(safe), number(finalized));
    }

    /// One step: a backfill range, one block of the window, or a reorg.
    pub async fn step(&mut self) -> Result<Step, FollowError> {
        if !self.loaded {
            let stored = self.store.checkpoint().await?;
            self.moved_to(stored);
            self.loaded = true;
        }
        let checkpoint = self.progress.borrow().clone();
        let next = checkpoint
            .as_ref()
            .map_or(self.config.start_block, |(n, _)| n + 1);
        // Mid-backfill, the next range is on its way: no round trip to the node first (the
        // head is looked at again every second, to extend the backfill).
        if self.pipeline.front().is_some_and(|p| p.from == next) {
            if self.head_read_at.elapsed() >= Duration::from_secs(1) {
                let head = self.head().await?;
                self.backfill_to = self
                    .backfill_to
                    .max(head.saturating_sub(self.config.window));
            }
            return self.backfill(next).await;
        }
        let head = self.head().await?;
        let safe_end = head.saturating_sub(self.config.window);
        if next <= head && next > safe_end {
            return self.follow(next, head, checkpoint.map(|(_, h)| h)).await;
        }
        // Before a backfill, or with nothing new: the node must still have the checkpoint's
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
            self.end_bulk().await?;
            return Ok(Step::CaughtUp);
        }
        self.backfill_to = safe_end;
        if checkpoint.is_none() && self.store.begin_bulk().await? {
            tracing::info!(
                to = safe_end,
                "bulk load: the session index is built once the backfill ends"
            );
        }
        self.backfill(next).await
    }

    /// Ends a bulk load (see [`Store::begin_bulk`]) if one is on: builds its indexes.
    async fn end_bulk(&self) -> Result<(), StoreError> {
        let started = Instant::now();
        if self.store.end_bulk().await? {
            let took = started.elapsed();
            self.metrics.index_build.set(took.as_secs_f64());
            tracing::info!(?took, "bulk load ended: indexes built");
        }
        Ok(())
    }

    /// The node's head block (counted in the metrics).
    async fn head(&mut self) -> Result<u64, FollowError> {
        let head = self.source.client.block_number().await?;
        self.head_read_at = Instant::now();
        self.metrics.head.set(head as i64);
        Ok(head)
    }

    /// Writes the next backfill range from `from` on, keeping up to `in_flight` ranges up to
    /// `backfill_to` being fetched meanwhile.
    async fn backfill(&mut self, from: u64) -> Result<Step, FollowError> {
        let limit = self.backfill_to;
        if self.pipeline.front().is_some_and(|p| p.from != from) {
            // A reorg, a restart or a failed write moved the checkpoint: start afresh.
            self.stop_fetching();
        }
        let mut next = self.pipeline.back().map_or(from, |p| p.to + 1);
        while self.pipeline.len() < self.config.in_flight.max(1) && next <= limit {
            let to = (next + self.range - 1).min(limit);
            let task = tokio::spawn(self.source.clone().fetch(next, to));
            self.pipeline.push_back(Pending {
                from: next,
                to,
                task,
            });
            next = to + 1;
        }
        let pending = self
            .pipeline
            .pop_front()
            .expect("from <= limit: one was started");
        let Fetched {
            blocks,
            mut rows,
            refused,
        } = pending.task.await??;
        let to = pending.to;
        let (blocks_read, logs) = (to - pending.from + 1, rows.len() as u64);
        self.range = range::next(
            self.range,
            blocks_read,
            logs,
            refused,
            self.config.max_range,
        );
        self.attribute(&mut rows).await?;
        if to == limit {
            // The backfill's last range lands with the indexes built: once the checkpoint
            // reaches it, queries run at full speed.
            self.end_bulk().await?;
        }
        let end = &blocks.last().expect("the range's end is among them").hash;
        self.write(&blocks, &rows, (to, end), to - from + 1).await?;
        tracing::info!(from, to, events = rows.len(), "backfilled");
        Ok(Step::Advanced(to))
    }

    /// Cancels the ranges and blocks being fetched.
    fn stop_fetching(&mut self) {
        for pending in self.pipeline.drain(..) {
            pending.task.abort();
        }
        for (_, task) in self.ahead.drain(..) {
            task.abort();
        }
    }

    /// Reads the blocks from `number` on — up to `in_flight` of them up to `head`, fetched at
    /// once — each of whose parent must be the block before it (the first's, the checkpoint's
    /// block `parent`), and writes those that chain as one batch.
    async fn follow(
        &mut self,
        number: u64,
        head: u64,
        parent: Option<String>,
    ) -> Result<Step, FollowError> {
        self.end_bulk().await?;
        if self.ahead.front().is_some_and(|(n, _)| *n != number) {
            self.stop_fetching();
        }
        let mut next = self.ahead.back().map_or(number, |(n, _)| n + 1);
        while self.ahead.len() < self.config.in_flight.max(1) && next <= head {
            let task = tokio::spawn(self.source.clone().fetch_block(next));
            self.ahead.push_back((next, task));
            next += 1;
        }
        let (mut blocks, mut rows, mut parent) = (Vec::new(), Vec::new(), parent);
        while let Some((_, task)) = self.ahead.pop_front() {
            let Some((header, block_rows)) = task.await?? else {
                // A lagging node that has not seen it yet.
                self.stop_fetching();
                break;
            };
            if parent.is_some_and(|p| header.parent_hash.to_string() != p) {
                if blocks.is_empty() {
                    return self.reorg(number - 1).await;
                }
                // The chain moved while its blocks were read: what chains is written, and the
                // next step meets the reorg.
                self.stop_fetching();
                break;
            }
            parent = Some(header.hash.to_string());
            blocks.push(block_row(&header));
            rows.extend(block_rows);
        }
        let Some(last) = blocks.last().map(|b| (b.number, b.hash.clone())) else {
            return Ok(Step::CaughtUp);
        };
        // With each block the node's safe and finalized blocks move: read them before the
        // blocks are published, so answers about them carry their finality.
        self.read_tags().await;
        self.attribute(&mut rows).await?;
        self.write(&blocks, &rows, (last.0, &last.1), blocks.len() as u64)
            .await?;
        if !rows.is_empty() {
            tracing::info!(from = number, to = last.0, events = rows.len(), "indexed");
        }
        Ok(Step::Advanced(last.0))
    }

    /// The stored block at `from` is no longer the node's: walks back to the last block both
    /// have and orphans everything above it.
    async fn reorg(&mut self, from: u64) -> Result<Step, FollowError> {
        self.stop_fetching();
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
        self.metrics.reorgs.inc();
        Metrics::add(&self.metrics.orphaned, orphaned);
        tracing::warn!(fork = fork.0, depth = from - fork.0, orphaned, "reorg");
        Ok(Step::Reorged {
            fork: fork.0,
            orphaned,
        })
    }

    /// Publishes the checkpoint the store now holds.
    fn moved_to(&self, checkpoint: Option<(u64, String)>) {
        if let Some((n, _)) = &checkpoint {
            self.metrics.indexed.set(*n as i64);
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
        m.db_write.observe(started.elapsed().as_secs_f64());
        Metrics::add(&m.blocks, blocks_covered);
        Metrics::add(&m.events, rows.len() as u64);
        let undecoded = rows.iter().filter(|r| r.event.is_none()).count();
        Metrics::add(&m.undecoded, undecoded as u64);
        Ok(())
    }

    async fn header(&self, number: u64) -> Result<Option<BlockHeader>, FollowError> {
        self.source.header(number).await
    }
}
