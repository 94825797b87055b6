//! The chain's values: its settings, transactions mined and their receipts, blocks, logs and
//! their filters, events, and the errors of its operations.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Header, TxEnvelope};
use alloy_primitives::{Address, Bloom, BloomInput, Bytes, B256, U256};

use crate::exec::DEFAULT_CHAIN_ID;
use crate::state::Log;

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
    /// Install the EVM fixtures (Safe, USDC, Multicall3, Permit2) in the genesis state
    /// (`--with-evm-fixtures`; see [`crate::fixtures`]).
    pub evm_fixtures: bool,
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
            evm_fixtures: false,
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
    pub(super) envelope: TxEnvelope,
    pub(super) from: Result<Address, TxError>,
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
    pub(super) fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<B256, Arc<MinedTx>>> {
        self.0.read().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<B256, Arc<MinedTx>>> {
        self.0.write().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn contains(&self, hash: &B256) -> bool {
        self.read().contains_key(hash)
    }

    pub(super) fn insert(&self, tx: Arc<MinedTx>) {
        self.write().insert(tx.hash, tx);
    }

    pub(super) fn remove(&self, hash: &B256) {
        self.write().remove(hash);
    }

    /// A copy of the map (for snapshots).
    pub(super) fn copy(&self) -> HashMap<B256, Arc<MinedTx>> {
        self.read().clone()
    }

    pub(super) fn replace(&self, map: HashMap<B256, Arc<MinedTx>>) {
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
    /// EIP-2930 access list: paid for as intrinsic gas, warm from the start.
    pub access_list: alloy_eips::eip2930::AccessList,
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
    /// EIP-3529 refund counter at the end (a transaction gets at most `gas_used / 5` of it).
    pub gas_refund: u64,
    /// Logs the message would emit (empty unless it succeeded).
    pub logs: Vec<Log>,
    /// How it halted, when it failed without reverting (`out of gas`, `invalid opcode`...).
    pub halted: Option<&'static str>,
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
    /// Hashes of transactions accepted into the pool (`eth_newPendingTransactionFilter`),
    /// automined ones included, as anvil reports them.
    PendingTransactions,
}

/// What [`Chain::filter_changes`] reports.
#[derive(Clone, Debug)]
pub enum FilterChanges {
    /// Matching logs since the last poll.
    Logs(Vec<ChainLog>),
    /// Hashes of the blocks added since the last poll.
    Blocks(Vec<B256>),
    /// Hashes of the transactions accepted since the last poll.
    Transactions(Vec<B256>),
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
