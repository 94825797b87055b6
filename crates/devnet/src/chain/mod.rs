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
mod view;

use view::History;
pub use view::{ChainView, PublishedView};

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Header, SignableTransaction, Transaction, TxEip1559, TxEnvelope};
use alloy_eips::eip2718::Decodable2718;
use alloy_primitives::{keccak256, Address, Bloom, BloomInput, Bytes, Signature, B256, U256, U64};

use crate::accounts::dev_accounts;
use crate::exec::{BlockEnv, CallStatus, Executor, DEFAULT_CHAIN_ID};
use crate::log_index::{LogIndex, LogPos};
use crate::state::{Log, State};
use crate::state_file::{StateFile, StateFileError};
use crate::trace::CallFrame;
use imbl::Vector;

/// Chain parameters.
#[derive(Clone, Debug)]
pub struct ChainConfig {
    /// Chain id (EIP-155), also reported to programs; nitro's dev node id (412346) by default.
    pub chain_id: u64,
    /// Constant base fee in wei (see the module docs).
    pub base_fee: u64,
    /// Gas limit of every block; transactions with a larger gas limit are refused.
    pub block_gas_limit: u64,
    /// Balance of each prefunded dev account.
    pub dev_balance: U256,
    /// Genesis timestamp; `None` = now.
    pub genesis_timestamp: Option<u64>,
    /// Keep the state of only the last N blocks (`--prune-history N`, as anvil's): memory stays
    /// bounded on long runs; state queries and reorgs reach back N blocks. `None`: keep all.
    pub prune_history: Option<u64>,
    /// Keep the transactions, receipts and logs of only the last N blocks
    /// (`--transaction-block-keeper N`, as anvil's): older blocks keep their headers, but their
    /// transactions are no longer found and their logs no longer returned. With
    /// `prune_history`, memory stays flat however many transactions are mined. `None`: keep
    /// all.
    pub transaction_block_keeper: Option<u64>,
    /// A filter not polled for this long is uninstalled, as geth's are (default 5 minutes).
    pub filter_timeout: std::time::Duration,
    /// How far the `safe` block tag lags the head; `finalized` lags twice as far, so that
    /// clients can tell the two apart. 0 (the default): every block is final at once.
    pub finality_depth: u64,
}

impl Default for ChainConfig {
    fn default() -> Self {
        ChainConfig {
            chain_id: DEFAULT_CHAIN_ID,
            base_fee: 100_000_000,
            block_gas_limit: 30_000_000,
            // 10,000 ETH, as anvil.
            dev_balance: U256::from(10_000u64) * U256::from(10u64).pow(U256::from(18u64)),
            genesis_timestamp: None,
            finality_depth: 0,
            prune_history: None,
            transaction_block_keeper: None,
            filter_timeout: std::time::Duration::from_secs(5 * 60),
        }
    }
}

/// Why a transaction cannot be traced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// No mined transaction has this hash (geth's wording).
    #[error("transaction {0} not found")]
    NotFound(B256),
    /// The state before its block is no longer kept (`--prune-history`, or a loaded state file).
    #[error("historical state for block {0} is not available")]
    NoState(u64),
}

/// Why a transaction was refused. Messages are geth's, which clients match on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TxError {
    /// The raw bytes are not a valid RLP / EIP-2718 transaction.
    #[error("rlp: {0}")]
    Decode(String),
    /// The signature is malformed or no sender can be recovered from it.
    #[error("invalid sender: {0}")]
    InvalidSignature(String),
    /// The transaction is signed for another chain id (EIP-155).
    #[error("invalid chain id for signer: have {have} want {want}")]
    WrongChainId {
        /// Chain id the transaction was signed for.
        have: u64,
        /// This chain's id.
        want: u64,
    },
    /// The nonce is below the sender's next nonce (already used).
    #[error("nonce too low: next nonce {state}, tx nonce {tx}")]
    NonceTooLow {
        /// The sender's next nonce.
        state: u64,
        /// The transaction's nonce.
        tx: u64,
    },
    /// The nonce is above the sender's next nonce (this devnet does not queue gapped nonces).
    #[error("nonce too high: next nonce {state}, tx nonce {tx}")]
    NonceTooHigh {
        /// The sender's next nonce.
        state: u64,
        /// The transaction's nonce.
        tx: u64,
    },
    /// The sender cannot pay `gas limit × fee cap + value`.
    #[error("insufficient funds for gas * price + value: have {have} want {want}")]
    InsufficientFunds {
        /// The sender's balance, in wei.
        have: U256,
        /// `gas limit × fee cap + value`, in wei.
        want: U256,
    },
    /// The gas limit is below the transaction's intrinsic gas.
    #[error("intrinsic gas too low: have {have}, want {want}")]
    IntrinsicGasTooLow {
        /// The transaction's gas limit.
        have: u64,
        /// Its intrinsic gas.
        want: u64,
    },
    /// The fee cap (`maxFeePerGas` or legacy gas price) is below the block base fee.
    #[error(
        "max fee per gas less than block base fee: maxFeePerGas: {max_fee}, baseFee: {base_fee}"
    )]
    FeeCapTooLow {
        /// The transaction's fee cap, in wei per gas.
        max_fee: u128,
        /// The block base fee, in wei per gas.
        base_fee: u64,
    },
    /// The priority fee exceeds the fee cap (EIP-1559).
    #[error("max priority fee per gas higher than max fee per gas")]
    TipAboveFeeCap,
    /// The gas limit exceeds the block gas limit.
    #[error("exceeds block gas limit")]
    GasLimitExceeded,
    /// A transaction type other than legacy, EIP-2930 and EIP-1559.
    #[error("transaction type not supported")]
    UnsupportedType,
    /// An EIP-2718 type byte with no payload after it.
    #[error("typed transaction too short")]
    TypedTooShort,
    /// A transaction with this hash is already pooled or mined.
    #[error("already known")]
    AlreadyKnown,
    /// A pooled transaction has this sender and nonce, and this one does not offer
    /// [`PRICE_BUMP_PERCENT`] more in both fee cap and tip.
    #[error("replacement transaction underpriced")]
    ReplacementUnderpriced,
    /// `eth_sendTransaction` from an account that is neither a dev account nor impersonated.
    #[error("unknown account")]
    UnknownAccount,
}

/// How much more (in percent) a transaction must offer, in fee cap and tip, to replace a pooled
/// one with the same sender and nonce (geth's `txpool.pricebump`).
pub const PRICE_BUMP_PERCENT: u128 = 10;

/// A log as stored in a receipt, with its position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReceiptLog {
    /// The log as emitted.
    pub log: Log,
    /// Index of the log in its block.
    pub log_index: u64,
}

/// A transaction receipt.
#[derive(Clone, Debug)]
pub struct Receipt {
    /// Whether the transaction succeeded (receipt status 1).
    pub status: bool,
    /// Gas used by this and all earlier transactions of its block.
    pub cumulative_gas_used: u64,
    /// Gas used by this transaction, after refunds.
    pub gas_used: u64,
    /// Price paid per gas in wei: base fee plus the tip actually paid.
    pub effective_gas_price: u128,
    /// Logs emitted, with their block-wide indices.
    pub logs: Vec<ReceiptLog>,
    /// Bloom filter over the logs' addresses and topics.
    pub logs_bloom: Bloom,
    /// The created contract, for a successful contract-creation transaction.
    pub contract_address: Option<Address>,
    /// Revert data of a failed transaction (not part of the Ethereum receipt; for debugging).
    pub revert_data: Bytes,
}

/// A signed transaction and the sender its signature recovers to (or why it does not).
#[derive(Clone, Debug)]
pub struct Recovered {
    envelope: TxEnvelope,
    from: Result<Address, TxError>,
}

impl Recovered {
    /// Recovers the sender of `envelope` (pure: no chain involved).
    pub fn new(envelope: TxEnvelope) -> Self {
        let from = envelope
            .recover_signer()
            .map_err(|e| TxError::InvalidSignature(e.to_string()));
        Recovered { envelope, from }
    }

    /// The signed transaction.
    pub fn envelope(&self) -> &TxEnvelope {
        &self.envelope
    }
}

/// A mined transaction with its receipt and position.
#[derive(Clone, Debug)]
pub struct MinedTx {
    /// The signed transaction as received.
    pub envelope: TxEnvelope,
    /// Transaction hash.
    pub hash: B256,
    /// Sender recovered from the signature.
    pub from: Address,
    /// Number of the block that includes it.
    pub block_number: u64,
    /// Hash of the block that includes it.
    pub block_hash: B256,
    /// Timestamp of the block that includes it (so a receipt is answered without the block).
    pub block_timestamp: u64,
    /// Position of the transaction in its block.
    pub index: u64,
    /// The transaction's receipt.
    pub receipt: Receipt,
}

/// The canonical chain's mined transactions by hash, shared by the chain and the views it
/// publishes (see [`ChainView`]). Each sits
/// behind an `Arc`: a map slot is 40 bytes (a receipt inline made empty slots cost 900), and
/// snapshots copy pointers, not receipts.
#[derive(Clone, Default)]
pub struct MinedTxs(Arc<RwLock<HashMap<B256, Arc<MinedTx>>>>);

impl MinedTxs {
    /// The transaction `hash`, if it is mined on the canonical chain.
    pub fn get(&self, hash: &B256) -> Option<Arc<MinedTx>> {
        self.read().get(hash).cloned()
    }

    /// The map, read-locked (writers are the chain's own methods, each holding it briefly).
    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<B256, Arc<MinedTx>>> {
        self.0.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<B256, Arc<MinedTx>>> {
        self.0.write().unwrap_or_else(|e| e.into_inner())
    }

    fn contains(&self, hash: &B256) -> bool {
        self.read().contains_key(hash)
    }

    fn insert(&self, tx: Arc<MinedTx>) {
        self.write().insert(tx.hash, tx);
    }

    fn remove(&self, hash: &B256) {
        self.write().remove(hash);
    }

    /// A copy of the map (for snapshots).
    fn copy(&self) -> HashMap<B256, Arc<MinedTx>> {
        self.read().clone()
    }

    fn replace(&self, map: HashMap<B256, Arc<MinedTx>>) {
        *self.write() = map;
    }
}

/// A mined block.
#[derive(Clone, Debug)]
pub struct Block {
    /// The block header (its RLP hashes to `hash`).
    pub header: Header,
    /// `keccak256(rlp(header))`.
    pub hash: B256,
    /// Hashes of the block's transactions, in order.
    pub transactions: Vec<B256>,
}

impl Block {
    /// The block's height (genesis is 0).
    pub fn number(&self) -> u64 {
        self.header.number
    }
}

/// A transaction waiting for the next block.
#[derive(Clone, Debug)]
struct PendingTx {
    envelope: TxEnvelope,
    hash: B256,
    from: Address,
}

/// A message to simulate (`eth_call` / `eth_estimateGas`).
#[derive(Clone, Debug, Default)]
pub struct CallRequest {
    /// Sender; `None` = the zero address.
    pub from: Option<Address>,
    /// `None` = contract creation.
    pub to: Option<Address>,
    /// Gas limit; `None` = the block gas limit.
    pub gas: Option<u64>,
    /// Value sent, in wei.
    pub value: U256,
    /// Calldata (or initcode for a creation).
    pub data: Bytes,
}

/// The result of a simulated message.
#[derive(Clone, Debug)]
pub struct SimOutcome {
    /// Whether the message succeeded.
    pub success: bool,
    /// Return data on success, revert data on revert.
    pub output: Bytes,
    /// Gas used including intrinsic gas, before refunds.
    pub gas_used: u64,
    /// Logs the message would emit (empty unless it succeeded).
    pub logs: Vec<Log>,
}

/// A log with its position in the chain, as filters and subscriptions report it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainLog {
    /// The log as emitted.
    pub log: Log,
    /// Index of the log in its block.
    pub log_index: u64,
    /// Number of the block that holds it.
    pub block_number: u64,
    /// Hash of the block that holds it.
    pub block_hash: B256,
    /// Hash of the transaction that emitted it.
    pub tx_hash: B256,
    /// Position of that transaction in its block.
    pub tx_index: u64,
    /// True when the block holding the log left the canonical chain (reorg, revert).
    pub removed: bool,
}

/// One change of the canonical chain: a block added or removed, with its logs.
#[derive(Clone, Debug)]
pub struct ChainEvent {
    /// The block added or removed.
    pub block: Block,
    /// True when the block left the canonical chain (reorg or snapshot revert).
    pub removed: bool,
    /// Its logs, with `removed` set like the event's.
    pub logs: Vec<ChainLog>,
}

/// Log criteria of `eth_getLogs`, `eth_newFilter` and `logs` subscriptions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogFilter {
    /// `None` = the head at the time of the query (`latest` and friends).
    pub from_block: Option<u64>,
    /// Last block of the range; `None` = the head at the time of the query.
    pub to_block: Option<u64>,
    /// Only the block with this hash (exclusive with the range).
    pub block_hash: Option<B256>,
    /// Any of these emitters (empty = any).
    pub addresses: Vec<Address>,
    /// Positional topics: `None` = any, `Some(alts)` = one of `alts`.
    pub topics: Vec<Option<Vec<B256>>>,
}

impl LogFilter {
    /// Address and topic criteria.
    pub fn matches_log(&self, log: &Log) -> bool {
        (self.addresses.is_empty() || self.addresses.contains(&log.address))
            && self.topics.iter().enumerate().all(|(i, want)| match want {
                None => true,
                Some(alts) => log.topics.get(i).is_some_and(|t| alts.contains(t)),
            })
    }

    /// Whether a block whose logs bloom is `bloom` may hold a matching log (blooms give false
    /// positives only), so `eth_getLogs` can skip the others without reading their receipts.
    pub fn may_match(&self, bloom: &Bloom) -> bool {
        let has = |bytes: &[u8]| bloom.contains_input(BloomInput::Raw(bytes));
        (self.addresses.is_empty() || self.addresses.iter().any(|a| has(a.as_slice())))
            && self.topics.iter().all(|want| match want {
                None => true,
                Some(alts) => alts.iter().any(|t| has(t.as_slice())),
            })
    }

    /// All criteria, with tags (`None` bounds) treated as open, as geth does for filter changes.
    pub fn matches(&self, l: &ChainLog) -> bool {
        if let Some(h) = self.block_hash {
            if l.block_hash != h {
                return false;
            }
        }
        self.from_block.is_none_or(|f| l.block_number >= f)
            && self.to_block.is_none_or(|t| l.block_number <= t)
            && self.matches_log(&l.log)
    }
}

/// What a filter watches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FilterKind {
    /// Logs matching a [`LogFilter`] (`eth_newFilter`).
    Logs(LogFilter),
    /// New block hashes (`eth_newBlockFilter`).
    Blocks,
}

/// What [`Chain::filter_changes`] reports.
#[derive(Clone, Debug)]
pub enum FilterChanges {
    /// Matching logs since the last poll.
    Logs(Vec<ChainLog>),
    /// Hashes of the blocks added since the last poll.
    Blocks(Vec<B256>),
}

struct Filter {
    kind: FilterKind,
    /// Position in the event record up to which changes were reported.
    cursor: usize,
    /// When it was installed or last polled for changes.
    polled: std::time::Instant,
}

/// Why [`Chain::reorg`] refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReorgError {
    /// The requested depth is 0 or above the chain height.
    #[error("reorg depth must be between 1 and the chain height {head}, got {depth}")]
    Depth {
        /// The requested number of blocks to replace.
        depth: u64,
        /// The current chain height.
        head: u64,
    },
    /// The fork point is older than the kept history (the chain was loaded from a state file).
    #[error("the state at block {fork} is not kept (history starts at block {first})")]
    NoHistory {
        /// The block the reorg would fork from.
        fork: u64,
        /// The oldest block whose state is kept.
        first: u64,
    },
    /// A replacement transaction has no recoverable sender.
    #[error(transparent)]
    Tx(#[from] TxError),
}

/// The result of [`Chain::reorg`].
#[derive(Clone, Debug, Default)]
pub struct ReorgOutcome {
    /// Hashes of the replacement blocks, oldest first.
    pub blocks: Vec<B256>,
    /// Transactions given for the new blocks but not included (nonce or balance no longer
    /// valid, or no room); they are discarded, not returned to the pool.
    pub excluded: Vec<B256>,
}

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

/// Intrinsic gas: 21000, +32000 for a creation, 4/16 per zero/non-zero calldata byte,
/// 2400 per access-list address and 1900 per storage key (EIP-2930).
pub fn intrinsic_gas(tx: &TxEnvelope) -> u64 {
    let data = tx.input();
    let zeros = data.iter().filter(|b| **b == 0).count() as u64;
    let mut gas = 21_000 + zeros * 4 + (data.len() as u64 - zeros) * 16;
    if tx.is_create() {
        gas += 32_000;
    }
    if let Some(list) = tx.access_list() {
        for item in list.iter() {
            gas += 2_400 + 1_900 * item.storage_keys.len() as u64;
        }
    }
    gas
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn calldata_gas(data: &[u8]) -> u64 {
    let zeros = data.iter().filter(|b| **b == 0).count() as u64;
    zeros * 4 + (data.len() as u64 - zeros) * 16
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
    /// of another format version or chain id. The pool and snapshots are cleared; filters and
    /// subscribers see the old blocks removed and the loaded ones added. History: see the
    /// module docs.
    pub fn load_state(&mut self, path: &std::path::Path) -> Result<(), StateFileError> {
        let loaded = StateFile::read(path)?.into_chain(self.view.config.chain_id)?;
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
mod tests {
    use super::*;
    use alloy_consensus::{SignableTransaction, TxEip1559, TxLegacy};
    use alloy_primitives::{Signature, TxKind};

    fn sign<T: SignableTransaction<Signature>>(tx: T, key: usize) -> TxEnvelope
    where
        TxEnvelope: From<alloy_consensus::Signed<T>>,
    {
        let sk = dev_accounts()[key].signing_key();
        let (sig, recid) = sk
            .sign_prehash_recoverable(tx.signature_hash().as_slice())
            .unwrap();
        let sig = Signature::from_signature_and_parity(sig, recid.is_y_odd());
        tx.into_signed(sig).into()
    }

    #[test]
    fn bloom_prefilter_never_skips_a_matching_block() {
        let (a, b) = (Address::repeat_byte(1), Address::repeat_byte(2));
        let (t1, t2) = (B256::repeat_byte(7), B256::repeat_byte(8));
        let mut bloom = Bloom::default();
        bloom.accrue(BloomInput::Raw(a.as_slice()));
        bloom.accrue(BloomInput::Raw(t1.as_slice()));
        let filter = |addresses: Vec<Address>, topics: Vec<Option<Vec<B256>>>| LogFilter {
            from_block: None,
            to_block: None,
            block_hash: None,
            addresses,
            topics,
        };
        assert!(filter(vec![], vec![]).may_match(&bloom));
        assert!(filter(vec![b, a], vec![None, Some(vec![t2, t1])]).may_match(&bloom));
        assert!(!filter(vec![b], vec![]).may_match(&bloom));
        assert!(!filter(vec![a], vec![Some(vec![t2])]).may_match(&bloom));
        assert!(!filter(vec![], vec![Some(vec![t1]), Some(vec![t2])]).may_match(&bloom));
    }

    fn transfer(nonce: u64, to: Address, value: u64) -> TxEip1559 {
        TxEip1559 {
            chain_id: DEFAULT_CHAIN_ID,
            nonce,
            gas_limit: 21_000,
            max_fee_per_gas: 2_000_000_000,
            max_priority_fee_per_gas: 1_000_000_000,
            to: TxKind::Call(to),
            value: U256::from(value),
            ..Default::default()
        }
    }

    #[test]
    fn transfer_charges_fees_and_chains_blocks() {
        let mut chain = Chain::default();
        let a = dev_accounts()[0].address;
        let to = Address::repeat_byte(0x42);
        let before = chain.state().balance(a);
        let hash = chain.send_transaction(sign(transfer(0, to, 5), 0)).unwrap();
        let tx = chain.transaction(hash).unwrap();
        assert!(tx.receipt.status);
        assert_eq!(tx.receipt.gas_used, 21_000);
        // effective price = min(max fee, base fee + tip) = 0.1 + 1 gwei.
        assert_eq!(tx.receipt.effective_gas_price, 1_100_000_000);
        assert_eq!(chain.state().balance(to), U256::from(5));
        assert_eq!(
            chain.state().balance(a),
            before - U256::from(5) - U256::from(21_000u64 * 1_100_000_000)
        );
        assert_eq!(chain.block_number(), 1);
        assert_eq!(
            chain.latest_block().header.parent_hash,
            chain.blocks()[0].hash
        );
        assert_eq!(chain.state().nonce(a), 1);
    }

    #[test]
    fn validation_errors() {
        let mut chain = Chain::default();
        let to = Address::repeat_byte(1);
        chain.send_transaction(sign(transfer(0, to, 1), 0)).unwrap();
        assert!(matches!(
            chain.send_transaction(sign(transfer(0, to, 2), 0)),
            Err(TxError::NonceTooLow { .. })
        ));
        assert!(matches!(
            chain.send_transaction(sign(transfer(5, to, 2), 0)),
            Err(TxError::NonceTooHigh { .. })
        ));
        let mut t = transfer(1, to, 1);
        t.chain_id = 1;
        assert!(matches!(
            chain.send_transaction(sign(t, 0)),
            Err(TxError::WrongChainId { .. })
        ));
        let mut t = transfer(1, to, 1);
        t.gas_limit = 20_000;
        assert!(matches!(
            chain.send_transaction(sign(t, 0)),
            Err(TxError::IntrinsicGasTooLow { .. })
        ));
        let mut t = transfer(1, to, 1);
        t.max_fee_per_gas = 1;
        t.max_priority_fee_per_gas = 1;
        assert!(matches!(
            chain.send_transaction(sign(t, 0)),
            Err(TxError::FeeCapTooLow { .. })
        ));
        let mut t = transfer(1, to, 1);
        t.gas_limit = 40_000_000;
        assert_eq!(
            chain.send_transaction(sign(t, 0)),
            Err(TxError::GasLimitExceeded)
        );
        let t = transfer(1, to, u64::MAX);
        chain.set_balance(dev_accounts()[0].address, U256::from(1_000u64));
        assert!(matches!(
            chain.send_transaction(sign(t, 0)),
            Err(TxError::InsufficientFunds { .. })
        ));
    }

    #[test]
    fn legacy_eip155_and_manual_mining_and_snapshots() {
        let mut chain = Chain::default();
        chain.set_automine(false);
        let to = Address::repeat_byte(2);
        let legacy = TxLegacy {
            chain_id: Some(DEFAULT_CHAIN_ID),
            nonce: 0,
            gas_price: 1_000_000_000,
            gas_limit: 21_000,
            to: TxKind::Call(to),
            value: U256::from(7),
            input: Bytes::new(),
        };
        let snap = chain.snapshot();
        let h1 = chain.send_transaction(sign(legacy, 1)).unwrap();
        let h2 = chain.send_transaction(sign(transfer(1, to, 1), 1)).unwrap();
        assert!(chain.transaction(h1).is_none());
        chain.mine(1);
        let block = chain.latest_block().clone();
        assert_eq!(block.transactions, vec![h1, h2]);
        assert_eq!(
            chain.transaction(h2).unwrap().receipt.cumulative_gas_used,
            42_000
        );
        assert_eq!(chain.state().balance(to), U256::from(8));
        assert!(chain.revert_to(snap));
        assert_eq!(chain.block_number(), 0);
        assert_eq!(chain.state().balance(to), U256::ZERO);
        assert!(chain.transaction(h1).is_none());
        assert!(!chain.revert_to(snap), "a snapshot is used up by revert");
    }

    #[test]
    fn access_lists_cost_intrinsic_gas_and_estimates_succeed() {
        use alloy_eips::eip2930::{AccessList, AccessListItem};
        let mut chain = Chain::default();
        let to = Address::repeat_byte(3);
        let tx = alloy_consensus::TxEip2930 {
            chain_id: DEFAULT_CHAIN_ID,
            nonce: 0,
            gas_price: 100_000_000,
            gas_limit: 21_000 + 2_400 + 1_900,
            to: TxKind::Call(to),
            value: U256::from(1),
            access_list: AccessList(vec![AccessListItem {
                address: to,
                storage_keys: vec![B256::ZERO],
            }]),
            input: Bytes::new(),
        };
        let mut short = tx.clone();
        short.gas_limit -= 1;
        assert_eq!(
            chain.send_transaction(sign(short, 2)),
            Err(TxError::IntrinsicGasTooLow {
                have: 25_299,
                want: 25_300
            })
        );
        let h = chain.send_transaction(sign(tx, 2)).unwrap();
        let r = &chain.transaction(h).unwrap().receipt;
        assert!(r.status);
        assert_eq!(r.gas_used, 25_300);
        // Base fee only: nothing for the coinbase.
        assert_eq!(chain.state().balance(Address::ZERO), U256::ZERO);

        let req = CallRequest {
            to: Some(to),
            data: Bytes::from(vec![1, 0]),
            ..Default::default()
        };
        assert_eq!(chain.estimate_gas(&req, |_| {}).unwrap(), 21_000 + 16 + 4);
    }

    #[test]
    fn unrecoverable_signatures_are_refused() {
        let mut chain = Chain::default();
        let tx = transfer(0, Address::repeat_byte(1), 1);
        let bogus = Signature::new(U256::ZERO, U256::from(1), false);
        let env: TxEnvelope = tx.into_signed(bogus).into();
        assert!(matches!(
            chain.send_transaction(env),
            Err(TxError::InvalidSignature(_))
        ));
        assert!(matches!(
            chain.send_raw_transaction(&[0xc0]),
            Err(TxError::Decode(_))
        ));
    }

    #[test]
    fn reorg_rewinds_state_history_and_records_events() {
        let mut chain = Chain::default();
        let to = Address::repeat_byte(9);
        let h1 = chain.send_transaction(sign(transfer(0, to, 1), 0)).unwrap();
        let h2 = chain.send_transaction(sign(transfer(1, to, 2), 0)).unwrap();
        let h3 = chain.send_transaction(sign(transfer(0, to, 4), 1)).unwrap();
        let old: Vec<B256> = chain.blocks().iter().map(|b| b.hash).collect();
        let filter = chain.new_filter(FilterKind::Blocks);
        let cursor = chain.event_count();
        // Replace blocks 2 and 3 with: block 2 = [h3], block 3 = [h2] — h2 still valid.
        let e2 = chain.transaction(h2).unwrap().envelope.clone();
        let e3 = chain.transaction(h3).unwrap().envelope.clone();
        let out = chain.reorg(vec![vec![e3], vec![e2]]).unwrap();
        assert!(out.excluded.is_empty());
        assert_eq!(chain.block_number(), 3);
        assert_eq!(chain.blocks()[1].hash, old[1]);
        assert_ne!(chain.blocks()[2].hash, old[2]);
        assert_eq!(chain.blocks()[2].header.parent_hash, old[1]);
        assert_eq!(chain.transaction(h1).unwrap().block_number, 1);
        assert_eq!(chain.transaction(h3).unwrap().block_number, 2);
        assert_eq!(chain.transaction(h2).unwrap().block_number, 3);
        assert_eq!(chain.state_at(1).unwrap().balance(to), U256::from(1));
        assert_eq!(chain.state_at(2).unwrap().balance(to), U256::from(5));
        assert_eq!(chain.state().balance(to), U256::from(7));
        let evs = chain.events_since(cursor);
        assert_eq!(
            evs.iter()
                .map(|e| (e.block.number(), e.removed))
                .collect::<Vec<_>>(),
            vec![(3, true), (2, true), (2, false), (3, false)]
        );
        let Some(FilterChanges::Blocks(hashes)) = chain.filter_changes(filter) else {
            panic!("block filter");
        };
        assert_eq!(hashes, out.blocks);
        // Dropping h1 makes h2 (same sender, next nonce) invalid: excluded.
        let e2 = chain.transaction(h2).unwrap().envelope.clone();
        let out = chain.reorg(vec![vec![], vec![], vec![e2]]).unwrap();
        assert_eq!(out.excluded, vec![h2]);
        assert!(chain.transaction(h1).is_none());
        assert_eq!(chain.state().balance(to), U256::ZERO);
        assert!(matches!(
            chain.reorg(vec![vec![]; 4]),
            Err(ReorgError::Depth { depth: 4, head: 3 })
        ));
    }

    #[test]
    fn filters_not_polled_within_the_timeout_are_uninstalled() {
        // A zero timeout: every filter has expired by the time it is next touched.
        let mut chain = Chain::new(ChainConfig {
            filter_timeout: std::time::Duration::ZERO,
            ..ChainConfig::default()
        });
        let id = chain.new_filter(FilterKind::Blocks);
        assert!(chain.filter(id).is_none());
        assert!(chain.filter_changes(id).is_none());
        assert!(!chain.uninstall_filter(id), "already gone");

        // The default (5 minutes): polled at once, it lives, and each poll restarts the clock.
        let mut chain = Chain::new(ChainConfig::default());
        let id = chain.new_filter(FilterKind::Blocks);
        chain.mine(1);
        assert!(matches!(chain.filter_changes(id), Some(FilterChanges::Blocks(b)) if b.len() == 1));
        assert!(chain.filter(id).is_some());
        assert!(chain.uninstall_filter(id));
    }

    #[test]
    fn snapshot_revert_reports_removed_blocks() {
        let mut chain = Chain::default();
        let snap = chain.snapshot();
        chain.mine(2);
        let cursor = chain.event_count();
        assert!(chain.revert_to(snap));
        let evs = chain.events_since(cursor);
        assert_eq!(
            evs.iter()
                .map(|e| (e.block.number(), e.removed))
                .collect::<Vec<_>>(),
            vec![(2, true), (1, true)]
        );
    }

    #[test]
    fn time_controls() {
        let mut chain = Chain::default();
        chain.set_next_timestamp(2_000_000_000);
        chain.mine(1);
        assert_eq!(chain.latest_block().header.timestamp, 2_000_000_000);
        chain.mine(1);
        assert!(chain.latest_block().header.timestamp > 2_000_000_000);
        chain.increase_time(100_000_000_000);
        chain.mine(1);
        assert!(chain.latest_block().header.timestamp >= now() + 100_000_000_000 - 10);
    }
}
