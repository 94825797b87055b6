//! What the API answers, as types (the OpenAPI document's schemas are derived from them), and
//! the query parameters each route reads, for the document ([`super::params::Params`] reads
//! the query itself: it also takes snake_case names and names the bad parameter).

use serde::Serialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::projections::SessionView;
use crate::records::Chain;

/// A log of a Bursar contract, decoded.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct Event {
    /// Where it is.
    #[serde(flatten)]
    pub(super) at: Chain,
    /// The chain.
    pub(super) chain_id: u64,
    /// The contract's name (`SessionWallet`, `SessionGateway`, `CounterpartyRegistry`,
    /// `ReceiptRegistry`, or a token's).
    pub(super) contract: String,
    /// Its address (EIP-55).
    pub(super) address: String,
    /// The event's name, when decoded.
    pub(super) event: Option<String>,
    /// Its arguments by name (amounts and ids decimal strings), when decoded.
    #[schema(value_type = Option<Object>)]
    pub(super) args: Option<Value>,
    /// The raw topics.
    pub(super) topics: Vec<String>,
    /// The raw data (0x-hex).
    pub(super) data: String,
    /// Why it did not decode.
    pub(super) decode_error: Option<String>,
    /// The session it belongs to.
    pub(super) session_id: Option<String>,
    /// On the canonical chain (false: a reorg orphaned it).
    pub(super) canonical: bool,
    /// The block hash that orphaned it.
    pub(super) orphaned_by: Option<String>,
}

/// A page of events.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct EventPage {
    /// In chain order.
    pub(super) events: Vec<Event>,
    /// The `cursor` of the next page; null on the last.
    pub(super) next_cursor: Option<String>,
}

/// A session as opened.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct Opened {
    /// 0x and 64 hex digits.
    pub(super) session_id: Option<String>,
    /// `SessionOpened`'s arguments: the terms.
    #[schema(value_type = Option<Object>)]
    pub(super) terms: Option<Value>,
    /// Where it opened.
    pub(super) opened_at: Chain,
    /// On the canonical chain.
    pub(super) canonical: bool,
}

/// A page of sessions.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct SessionPage {
    /// In the order they opened.
    pub(super) sessions: Vec<Opened>,
    /// The `cursor` of the next page; null on the last.
    pub(super) next_cursor: Option<String>,
}

/// The block an answer is as of.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct AsOfView {
    /// The last block counted.
    pub(super) block_number: u64,
    /// Its time (unix seconds), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) block_timestamp: Option<u64>,
    /// The `asOfTime` asked, if any.
    pub(super) as_of_time: Option<u64>,
}

/// A session's terms and state by the wallet's rules, as of a block.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct SessionState {
    /// 0x and 64 hex digits.
    pub(super) session_id: String,
    /// The terms and state.
    #[serde(flatten)]
    pub(super) state: SessionView,
    /// The block it is as of.
    pub(super) as_of: AsOfView,
}

/// Executed payments summed.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct Spend {
    /// The grouping asked.
    pub(super) group_by: Vec<&'static str>,
    /// One per group: its keys (as `groupBy` names them), `total` (base units) and `payments`.
    #[schema(value_type = Vec<Object>)]
    pub(super) groups: Vec<Value>,
    /// The block it is as of.
    pub(super) as_of: AsOfView,
}

/// A page of receipts.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct ReceiptPage {
    /// In the order they were recorded; each is [`Receipt`].
    #[schema(value_type = Vec<Receipt>)]
    pub(super) receipts: Vec<Value>,
    /// The `cursor` of the next page; null on the last.
    pub(super) next_cursor: Option<String>,
}

/// A receipt: `ReceiptRecorded`'s arguments (receiptId, sessionId, payer, payee, token,
/// amount, purpose…), with `recorded` (a [`Chain`]), `acknowledged`, and `acknowledgement`
/// (`{responseHash, at}` or null).
#[derive(ToSchema)]
#[schema(value_type = Object)]
#[allow(dead_code)] // A schema: `crate::records::Records::receipt` builds the answer.
pub(super) struct Receipt(Value);

/// A provenance record: `ProvenanceRecorded`'s arguments (recordId, subject, attester,
/// parents…), with `recorded` (a [`Chain`]), `valid`, and `revocation` (`{by, reason, at}` or
/// null).
#[derive(ToSchema)]
#[schema(value_type = Object)]
#[allow(dead_code)] // A schema: `crate::records::Records::record` builds the answer.
pub(super) struct Record(Value);

/// A page of provenance records.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct RecordPage {
    /// In the order they were recorded; each is [`Record`].
    #[schema(value_type = Vec<Record>)]
    pub(super) records: Vec<Value>,
    /// The `cursor` of the next page; null on the last.
    pub(super) next_cursor: Option<String>,
}

/// A record's lineage.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
#[allow(dead_code)] // A schema: `crate::records::Records::lineage` builds the answer.
pub(super) struct Lineage {
    /// The record.
    record: Record,
    /// False when the record or an ancestor found is revoked.
    lineage_valid: bool,
    /// Records it derives from, each with its `depth` (generations up).
    ancestors: Vec<Record>,
    /// Records derived from it, each with its `depth` (generations down).
    descendants: Vec<Record>,
}

/// How far indexing got, and who signs exports.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct Health {
    /// `ok`.
    pub(super) status: &'static str,
    /// The chain followed.
    pub(super) chain_id: u64,
    /// The node's head.
    pub(super) head_block: u64,
    /// Blocks between the head and the last indexed.
    pub(super) head_lag: u64,
    /// The last block indexed.
    pub(super) indexed_block: Option<u64>,
    /// Its hash.
    pub(super) indexed_block_hash: Option<String>,
    /// The node's `safe` block.
    pub(super) safe_block: Option<u64>,
    /// The node's `finalized` block.
    pub(super) finalized_block: Option<u64>,
    /// The address (EIP-55) whose key signs audit exports' manifests (pin it with
    /// `bursar audit verify --signer`).
    pub(super) export_signer: String,
}

/// The point in the chain an answer is as of.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // Documents what `Params` reads.
pub(super) struct AsOfQuery {
    /// As of this block (default: the last block indexed).
    #[param(rename = "asOfBlock")]
    as_of_block: Option<u64>,
    /// As of this unix time: the last block at or before it.
    #[param(rename = "asOfTime")]
    as_of_time: Option<u64>,
}

/// A range of blocks or times, with or without orphaned rows.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // Documents what `Params` reads.
pub(super) struct RangeQuery {
    /// From this block on.
    #[param(rename = "fromBlock")]
    from_block: Option<u64>,
    /// Up to this block.
    #[param(rename = "toBlock")]
    to_block: Option<u64>,
    /// From this block time on (unix seconds).
    #[param(rename = "fromTime")]
    from_time: Option<u64>,
    /// Up to this block time (unix seconds).
    #[param(rename = "toTime")]
    to_time: Option<u64>,
    /// `true`: rows a reorg orphaned too (with `orphanedBy`).
    #[param(rename = "includeOrphaned")]
    include_orphaned: Option<bool>,
}

/// Paging.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // Documents what `Params` reads.
pub(super) struct PageQuery {
    /// `nextCursor` of the previous page.
    cursor: Option<String>,
    /// 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u64>,
}
