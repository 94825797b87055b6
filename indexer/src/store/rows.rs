//! What the store reads and writes: blocks, logs, the filters over logs, and links between
//! records.

use alloy_primitives::{Bytes, B256};
use serde_json::Value;

/// A block as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockRow {
    /// Its number.
    pub number: u64,
    /// Its hash.
    pub hash: String,
    /// Its parent's hash.
    pub parent_hash: String,
    /// Unix seconds.
    pub timestamp: u64,
}

/// A log as stored: where it is on chain, what it says, and whether it is still canonical.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LogRow {
    /// The chain's id.
    pub chain_id: u64,
    /// Its block.
    pub block_number: u64,
    /// That block's hash.
    pub block_hash: String,
    /// That block's time (unix seconds).
    pub block_timestamp: u64,
    /// Its transaction.
    pub tx_hash: String,
    /// Its position in the block.
    pub log_index: u64,
    /// The contract that emitted it.
    pub address: String,
    /// Which Bursar contract that is (`SessionWallet`, …).
    pub contract: String,
    /// Its topics (stored as their 32-byte words end to end).
    pub topics: Vec<B256>,
    /// Its data.
    pub data: Bytes,
    /// The event's name, when it decoded.
    pub event: Option<String>,
    /// The event's arguments (JSON), when it decoded.
    pub args: Option<Value>,
    /// Why it did not decode.
    pub decode_error: Option<String>,
    /// The session it concerns.
    pub session_id: Option<String>,
    /// False once a reorg took its block off the chain.
    pub canonical: bool,
    /// The hash of the block that replaced its block, once orphaned.
    pub orphaned_by: Option<String>,
}

/// Which logs a query wants.
#[derive(Clone, Debug, Default)]
pub struct LogFilter {
    /// Only this session's.
    pub session_id: Option<String>,
    /// Only this event's.
    pub event: Option<String>,
    /// Only these events' (any of them; none: any event).
    pub events: &'static [&'static str],
    /// From this block on.
    pub from_block: Option<u64>,
    /// Up to this block.
    pub to_block: Option<u64>,
    /// From this block time on (unix seconds).
    pub from_time: Option<u64>,
    /// Up to this block time.
    pub to_time: Option<u64>,
    /// Orphaned ones too.
    pub include_orphaned: bool,
    /// After this `(block number, log index)` (a page's cursor).
    pub after: Option<(u64, u64)>,
    /// Only those whose decoded arguments `.0` (letters only) are `.1` (as the JSON has them).
    pub args: Vec<(String, String)>,
    /// Only those that have (or lack) a canonical event linked to them.
    pub linked: Option<Link>,
    /// Only those whose session has (`true`) or lacks (`false`) a canonical event of this
    /// name (up to `to_block`): a session's status.
    pub session_events: Vec<(bool, &'static str)>,
    /// At most this many.
    pub limit: u64,
}

/// A canonical event `event` whose argument `field` equals the same argument of the row: a
/// receipt's acknowledgement, a record's revocation.
#[derive(Clone, Copy, Debug)]
pub struct Link {
    /// Whether the row must have such an event (or must not).
    pub present: bool,
    /// The linked event's name.
    pub event: &'static str,
    /// The argument both carry.
    pub field: &'static str,
}
