//! The chain: signed transactions, validation, fees, receipts and blocks over [`Executor`].
//!
//! Choices a client may notice (all deliberate, for a dev chain):
//! * The base fee is constant ([`ChainConfig::base_fee`], default 0.1 gwei — Arbitrum's floor)
//!   unless set for the next blocks ([`Chain::set_next_block_base_fee`]); nitro's dev node also
//!   sits at its minimum, so there is no EIP-1559 update.
//! * `transactionsRoot` is `keccak256(concat(tx hashes))` and `receiptsRoot` the same over
//!   receipt-log-blooms+status; `stateRoot` is zero. Block hashes are real header hashes
//!   (`keccak256(rlp(header))`) over those fields, so `parentHash` chains.
//! * Automine (a block per transaction) is on by default; with it off, transactions wait in
//!   a pool (in arrival order) until [`Chain::mine`]; a pooled sender and nonce can be replaced
//!   by a transaction paying [`PRICE_BUMP_PERCENT`] more.
//! * The state after every block is kept (an O(1) clone: the maps are persistent and share
//!   structure) so that block tags/numbers can query history, up to
//!   [`ChainConfig::prune_history`] blocks back. Program activations are part of that state
//!   (ArbWasm storage), so a historical `eth_call` sees the activations of its block.
//! * A pooled transaction whose sender can no longer pay when its block is built (e.g. after
//!   `anvil_setBalance`) is dropped without a receipt.
//! * Every change of the canonical chain is recorded as a [`ChainEvent`] (a block added, or a
//!   block removed by a reorg or a snapshot revert, with its logs); filters
//!   ([`Chain::new_filter`]) and WebSocket subscriptions read that record from a cursor, so
//!   removed logs are reported again with `removed: true`, as geth does.
//! * [`Chain::reorg`] replaces the last N blocks: the state at the fork point is restored from
//!   history and the new blocks' transactions re-executed against it.
//!   Replacement blocks keep the old timestamps but carry `extraData = "bursar-reorg-<k>"`,
//!   so their hashes always differ from the blocks they replace.
//! * Priority fees are accepted and paid to the coinbase (zero address), but the node asks for
//!   none (`eth_maxPriorityFeePerGas` = 0), as Arbitrum ignores tips.
//! * [`Chain::save_state`] / [`Chain::load_state`] write and read the chain as JSON (see
//!   [`crate::state_file`]): the current world state and every block with its transactions and
//!   receipts. Per-block states are not saved: after a load, state queries (`state_at`) for
//!   blocks before the loaded head return `None` (`header not found` over JSON-RPC), an
//!   `eth_call` at such a block runs against the loaded state, and a reorg cannot fork below
//!   the loaded head.
//!
//! Layout: this module holds the types and the state file; `view` the blocks, per-block
//! states, transactions and log index with their read accessors ([`ChainView`], which the
//! chain derefs to and publishes after every change); `Chain`'s other methods are split by
//! concern: `pool` (accepting and validating transactions, the pool), `blocks` (building and
//! sealing them), `events` (the event record, the log index, filters), `reorg`, `simulate`
//! (`eth_call`, `eth_estimateGas`, traces), `time` (the clock) and `dev` (automine, interval
//! mining, cheats, snapshots).

mod blocks;
mod dev;
mod events;
mod pool;
mod reorg;
mod simulate;
mod time;
pub(crate) mod types;
mod view;

pub use types::*;
use view::History;
pub use view::{ChainView, PublishedView};

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Header, SignableTransaction, Transaction, TxEip1559, TxEnvelope};
use alloy_eips::eip2718::Decodable2718;
use alloy_primitives::{keccak256, Address, Bloom, BloomInput, Bytes, Signature, B256, U256, U64};

use crate::accounts::dev_accounts;
use crate::exec::{BlockEnv, CallStatus, Executor};
use crate::log_index::{LogIndex, LogPos};
use crate::state::State;
use crate::state_file::{StateFile, StateFileError};
use crate::struct_log::{OpcodeTrace, StructLogConfig};
use crate::trace::CallFrame;
use imbl::Vector;

/// A transaction waiting for the next block.
#[derive(Clone, Debug)]
struct PendingTx {
    envelope: TxEnvelope,
    hash: B256,
    from: Address,
}

struct Filter {
    kind: FilterKind,
    /// Position in the event record up to which changes were reported.
    cursor: usize,
    /// When it was installed or last polled for changes.
    polled: std::time::Instant,
    /// A pending-transaction filter's hashes not yet polled (at most
    /// [`MAX_PENDING_HASHES`]; older ones are dropped, as a full subscription channel drops).
    transactions: std::collections::VecDeque<B256>,
}

/// How many transaction hashes a pending-transaction filter keeps between polls.
const MAX_PENDING_HASHES: usize = 10_000;

/// Everything [`Chain::snapshot`] saves.
struct Snapshot {
    state: State,
    block_env: BlockEnv,
    blocks: Vector<Block>,
    history: History,
    txs: HashMap<B256, Arc<MinedTx>>,
    pending: Vec<PendingTx>,
    time_offset: i64,
    next_timestamp: Option<u64>,
}

/// The dev chain.
pub struct Chain {
    /// Blocks, states, mined transactions, the log index and the settings (see [`ChainView`]).
    view: ChainView,
    /// The last copy of `view` published (see [`Chain::publish`]).
    published: PublishedView,
    exec: Executor,
    pending: Vec<PendingTx>,
    automine: bool,
    /// Seconds added to the wall clock (`evm_increaseTime`).
    time_offset: i64,
    next_timestamp: Option<u64>,
    snapshots: Vec<Option<Snapshot>>,
    /// Every change of the canonical chain, in order (see [`ChainEvent`]), from event number
    /// `events_base` on (older ones are forgotten with `transaction_block_keeper`).
    events: Vec<ChainEvent>,
    events_base: usize,
    /// Called with the new event count whenever events are recorded.
    on_event: Option<Box<dyn Fn(usize) + Send>>,
    filters: HashMap<u64, Filter>,
    next_filter_id: u64,
    reorgs: u64,
    /// Accounts `eth_sendTransaction` may send as without a key.
    impersonated: HashSet<Address>,
    /// Mine a block every this long (see [`crate::miner`]); `None`: only on demand/automine.
    interval_mining: Option<std::time::Duration>,
    /// Called when `interval_mining` changes (wakes the miner task).
    on_interval: Option<Box<dyn Fn(Option<std::time::Duration>) + Send>>,
}

impl Chain {
    /// Publishes a copy of the view. Called at the end of every change of blocks or state.
    pub(super) fn publish(&self) {
        self.published.store(self.view.clone());
    }

    /// After a dev method changed the head's state: the view takes it, and is published.
    pub(super) fn publish_head_state(&mut self) {
        self.view.history.set_head(self.exec.state().clone());
        self.publish();
    }

    /// A handle on the view this chain publishes after every change.
    pub fn published_view(&self) -> PublishedView {
        self.published.clone()
    }
}

impl std::ops::Deref for Chain {
    type Target = ChainView;

    fn deref(&self) -> &ChainView {
        &self.view
    }
}

/// Decodes a raw signed transaction (an EIP-2718 envelope or legacy RLP) with geth's errors:
/// `rlp: …` for bad RLP (trailing bytes included), `typed transaction too short`, `transaction
/// type not supported` for types other than legacy, EIP-2930 and EIP-1559. The one decoder of
/// `eth_sendRawTransaction`, `anvil_reorg` and [`Chain::send_raw_transaction`].
pub fn decode_raw_transaction(raw: &[u8]) -> Result<TxEnvelope, TxError> {
    match raw.first() {
        // Not an RLP list: an EIP-2718 type byte, which must be followed by a payload.
        None => return Err(TxError::TypedTooShort),
        Some(&ty) if ty <= 0x7f => {
            if raw.len() == 1 {
                return Err(TxError::TypedTooShort);
            }
            if !matches!(ty, 1 | 2) {
                return Err(TxError::UnsupportedType);
            }
        }
        Some(_) => {}
    }
    TxEnvelope::decode_2718_exact(raw).map_err(|e| TxError::Decode(e.to_string()))
}

/// Intrinsic gas: 21000, +32000 and 2 per initcode word for a creation, 4/16 per zero/non-zero
/// calldata byte,
/// 2400 per access-list address and 1900 per storage key (EIP-2930).
pub fn intrinsic_gas(tx: &TxEnvelope) -> u64 {
    message_intrinsic_gas(tx.input(), tx.is_create()) + tx.access_list().map_or(0, access_list_gas)
}

/// EIP-2930: 2400 per access-list address and 1900 per storage key.
fn access_list_gas(list: &alloy_eips::eip2930::AccessList) -> u64 {
    list.iter()
        .map(|item| 2_400 + 1_900 * item.storage_keys.len() as u64)
        .sum()
}

/// Intrinsic gas of a message without an access list: the base, its calldata and, for a
/// creation, CREATE and EIP-3860's 2 gas per word of initcode.
fn message_intrinsic_gas(data: &[u8], create: bool) -> u64 {
    let zeros = data.iter().filter(|b| **b == 0).count() as u64;
    let mut gas = 21_000 + zeros * 4 + (data.len() as u64 - zeros) * 16;
    if create {
        gas += 32_000 + 2 * (data.len() as u64).div_ceil(32);
    }
    gas
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Default for Chain {
    fn default() -> Self {
        Self::new(ChainConfig::default())
    }
}

impl Chain {
    /// A chain with the genesis block and the ten prefunded dev accounts.
    pub fn new(config: ChainConfig) -> Self {
        let mut exec = Executor::new();
        for account in dev_accounts() {
            exec.state_mut()
                .set_balance(account.address, config.dev_balance);
        }
        {
            let b = exec.block_mut();
            b.chain_id = config.chain_id;
            b.basefee = U256::from(config.base_fee);
            b.gas_limit = config.block_gas_limit;
        }
        if config.evm_fixtures {
            crate::fixtures::install(&mut exec);
        }
        let view = ChainView {
            config,
            blocks: Vector::new(),
            history: History::default(),
            txs: MinedTxs::default(),
            log_index: LogIndex::default(),
        };
        let mut chain = Chain {
            published: PublishedView::new(view.clone()),
            view,
            exec,
            pending: vec![],
            automine: true,
            time_offset: 0,
            next_timestamp: None,
            snapshots: vec![],
            events: vec![],
            events_base: 0,
            on_event: None,
            filters: HashMap::new(),
            impersonated: HashSet::new(),
            interval_mining: None,
            on_interval: None,
            next_filter_id: 1,
            reorgs: 0,
        };
        let ts = chain.config.genesis_timestamp.unwrap_or_else(now);
        chain.seal_block(0, ts, vec![], Bytes::new());
        chain.publish();
        chain
    }

    /// Puts the executor back on the head's state after a panic inside a request or the
    /// interval miner (a devnet bug, answered -32603 by the RPC layer): the panic may have taken
    /// the executor's world mid-call, or left it on a simulation's or a replay's state. Blocks
    /// and the pool are untouched (a block being built replaces the pool only once sealed), so
    /// pooled transactions stay pooled; with automine, the transaction whose block panicked
    /// stays pooled too, though its sender got an error.
    pub fn recover(&mut self) {
        let head = self.block_number();
        let Some(state) = self.view.state_at(head).cloned() else {
            return;
        };
        let header = &self.view.blocks[head as usize].header;
        let block = BlockEnv {
            number: head,
            timestamp: header.timestamp,
            chain_id: self.view.config.chain_id,
            basefee: U256::from(self.view.config.base_fee),
            coinbase: Address::ZERO,
            gas_limit: self.view.config.block_gas_limit,
        };
        self.exec.recover(state, block);
    }

    /// The executor (read access to state, programs, environment).
    pub fn executor(&self) -> &Executor {
        &self.exec
    }

    /// The world state at the head.
    pub fn state(&self) -> &State {
        self.exec.state()
    }

    /// Makes `blocks` (with their transactions `txs`) the canonical chain, recording the blocks
    /// after the common prefix as removed (newest first), then the new ones as added.
    fn replace_blocks(&mut self, blocks: Vector<Block>, txs: HashMap<B256, Arc<MinedTx>>) {
        let common = self
            .blocks
            .iter()
            .zip(&blocks)
            .take_while(|(a, b)| a.hash == b.hash)
            .count();
        for n in (common..self.view.blocks.len()).rev() {
            let block = self.view.blocks[n].clone();
            self.record(block, true);
        }
        self.view.blocks = blocks;
        self.view.txs.replace(txs);
        for n in common..self.view.blocks.len() {
            let block = self.view.blocks[n].clone();
            self.record(block, false);
        }
    }

    // ----- state file -------------------------------------------------------------------------

    /// Writes the chain to `path` as JSON (the current world state, blocks, transactions and
    /// receipts; see [`crate::state_file`]), atomically: a temporary file next to it, then a
    /// rename. Pool transactions, snapshots, filters and per-block states are not saved.
    pub fn save_state(&self, path: &std::path::Path) -> Result<(), StateFileError> {
        let mined = self.view.txs.read();
        let blocks = self.view.blocks.iter().map(|b| {
            let txs = b.transactions.iter().map(|h| mined[h].as_ref()).collect();
            (b, txs)
        });
        StateFile::new(self.view.config.chain_id, self.exec.state(), blocks).write(path)
    }

    /// Replaces this chain's blocks, transactions and world state with those saved in `path`
    /// by [`Chain::save_state`]; the chain then mines on top of the loaded head. Refuses a file
    /// of another format version or chain id, or one saved without the EVM fixtures when this
    /// chain asks for them. The pool and snapshots are cleared; filters and
    /// subscribers see the old blocks removed and the loaded ones added. History: see the
    /// module docs.
    pub fn load_state(&mut self, path: &std::path::Path) -> Result<(), StateFileError> {
        let loaded = StateFile::read(path)?.into_chain(self.view.config.chain_id)?;
        if self.view.config.evm_fixtures && loaded.state.code(bursar_bindings::evm::USDC).is_empty()
        {
            return Err(StateFileError::WithoutFixtures {
                path: path.to_path_buf(),
            });
        }
        let head = loaded
            .blocks
            .last()
            .expect("a state file has blocks")
            .number();
        *self.exec.state_mut() = loaded.state.clone();
        self.view.history = History::only(head, loaded.state);
        let txs = loaded
            .txs
            .into_iter()
            .map(|t| (t.hash, Arc::new(t)))
            .collect();
        self.replace_blocks(loaded.blocks.into(), txs);
        self.pending.clear();
        self.snapshots.clear();
        self.publish();
        Ok(())
    }
}

#[cfg(test)]
mod tests;
