//! What reads of finished blocks need — blocks, the state after each, mined transactions, the
//! log index, the chain's settings — as one value that is cheap to copy: its collections are
//! persistent (`imbl`), so a copy shares them. The chain is its current view plus what writing
//! needs (the executor, the pool, events, filters, snapshots), and derefs to it; after every
//! change it publishes a copy ([`PublishedView`]) from which the JSON-RPC server answers block,
//! state, receipt and log queries without waiting for a transaction that is running.

use std::sync::{Arc, RwLock};

use alloy_primitives::B256;

use super::types::*;
use crate::log_index::{LogIndex, LogPos};
use crate::state::{Log, State};
use imbl::Vector;

/// The canonical chain as of its last change (see the module docs).
#[derive(Clone)]
pub struct ChainView {
    pub(super) config: ChainConfig,
    pub(super) blocks: Vector<Block>,
    /// State after each block (activations included); the head's as dev methods left it.
    pub(super) history: History,
    pub(super) txs: MinedTxs,
    /// The canonical chain's logs by emitter and topic, kept in step by [`Chain::record`].
    pub(super) log_index: LogIndex,
}

/// The last [`ChainView`] a chain published, readable without the chain's lock.
#[derive(Clone)]
pub struct PublishedView(Arc<RwLock<Arc<ChainView>>>);

impl PublishedView {
    pub(super) fn new(view: ChainView) -> Self {
        PublishedView(Arc::new(RwLock::new(Arc::new(view))))
    }

    /// The view as of the chain's last change.
    pub fn latest(&self) -> Arc<ChainView> {
        Arc::clone(&self.0.read().unwrap_or_else(|e| e.into_inner()))
    }

    pub(super) fn store(&self, view: ChainView) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(view);
    }
}

impl ChainView {
    /// The parameters the chain was started with.
    pub fn config(&self) -> &ChainConfig {
        &self.config
    }

    /// The chain id (EIP-155).
    pub fn chain_id(&self) -> u64 {
        self.config.chain_id
    }

    /// The base fee per gas in wei of the next block (constant unless set, see the module docs).
    pub fn base_fee(&self) -> u64 {
        self.config.base_fee
    }

    /// The state after block `number` (for the head: as dev methods left it).
    pub fn state_at(&self, number: u64) -> Option<&State> {
        self.history.get(number)
    }

    /// Height of the head block.
    pub fn block_number(&self) -> u64 {
        self.blocks.len() as u64 - 1
    }

    /// The block the `safe` tag names: `finality_depth` below the head (genesis at least).
    pub fn safe_block_number(&self) -> u64 {
        self.block_number()
            .saturating_sub(self.config.finality_depth)
    }

    /// The block the `finalized` tag names: twice `finality_depth` below the head.
    pub fn finalized_block_number(&self) -> u64 {
        self.block_number()
            .saturating_sub(self.config.finality_depth.saturating_mul(2))
    }

    /// The head block.
    pub fn latest_block(&self) -> &Block {
        self.blocks.last().expect("genesis exists")
    }

    /// The canonical block at `number`, if the chain is that high.
    pub fn block_by_number(&self, number: u64) -> Option<&Block> {
        self.blocks.get(usize::try_from(number).ok()?)
    }

    /// The canonical block with `hash`, if any.
    pub fn block_by_hash(&self, hash: B256) -> Option<&Block> {
        self.blocks.iter().rev().find(|b| b.hash == hash)
    }

    /// All canonical blocks, genesis first.
    pub fn blocks(&self) -> &Vector<Block> {
        &self.blocks
    }

    /// A mined transaction by hash, with its receipt.
    pub fn transaction(&self, hash: B256) -> Option<Arc<MinedTx>> {
        self.txs.get(&hash)
    }

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

/// The state after each block from `first` on (block 0, unless the chain was loaded from a
/// state file, which keeps only the state of its head, or history is pruned).
#[derive(Clone, Default)]
pub(super) struct History {
    pub(super) first: u64,
    /// Behind `Arc`s: adding to a shared `Vector` copies its last chunk, which should copy
    /// pointers, not states.
    states: Vector<Arc<State>>,
}

impl History {
    pub(super) fn get(&self, number: u64) -> Option<&State> {
        let i = number.checked_sub(self.first)?;
        self.states.get(usize::try_from(i).ok()?).map(|s| &**s)
    }

    /// Adds the state after the next block, keeping at most `keep` states (`None`: all).
    pub(super) fn push(&mut self, state: State, keep: Option<u64>) {
        self.states.push_back(Arc::new(state));
        let keep = keep.map_or(usize::MAX, |k| {
            usize::try_from(k.max(1)).unwrap_or(usize::MAX)
        });
        while self.states.len() > keep {
            self.states.pop_front();
            self.first += 1;
        }
    }

    /// History holding only `state`, the state after block `number`.
    pub(super) fn only(number: u64, state: State) -> Self {
        History {
            first: number,
            states: Vector::unit(Arc::new(state)),
        }
    }

    /// Replaces the newest state (the head's, after a dev method changed it).
    pub(super) fn set_head(&mut self, state: State) {
        if let Some(last) = self.states.back_mut() {
            *last = Arc::new(state);
        }
    }

    /// Forgets the states after block `number`.
    pub(super) fn truncate_after(&mut self, number: u64) {
        let keep = (number + 1).saturating_sub(self.first);
        self.states
            .truncate(usize::try_from(keep).unwrap_or(usize::MAX));
    }
}
