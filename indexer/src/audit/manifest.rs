//! The export's last line: what the rows cover, from which contracts, and the indexer's
//! signature of it.

use std::collections::BTreeMap;

use alloy_primitives::{Bytes, B256};
use serde::{Deserialize, Serialize};

/// The export's last line. Its JSON is what the signature signs, field by field in this order:
/// no field may be added or dropped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    /// The session exported.
    pub session_id: String,
    /// The chain's id.
    pub chain_id: u64,
    /// How many rows.
    pub rows: u64,
    /// The first block the rows cover (the session's opening).
    pub from_block: u64,
    /// The last block indexed when exported: the rows are complete up to it.
    pub to_block: u64,
    /// That block's hash.
    pub head_block_hash: String,
    /// The last row's hash (zero without rows).
    pub last_hash: B256,
    /// The first block the indexer follows (the contracts' deploy block): the session opened
    /// at or after it.
    pub deploy_block: u64,
    /// The contracts followed, by name (`SessionWallet`, `SessionGateway`,
    /// `CounterpartyRegistry`, `ReceiptRegistry`), EIP-55.
    pub contracts: BTreeMap<String, String>,
    /// The Ethereum address of the indexer's export key, EIP-55.
    pub signer: String,
    /// `r ‖ s ‖ v` (65 bytes, v = 27 or 28) of the EIP-191 signature (see [`super::sign`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<Bytes>,
}

/// The manifest as an export's last line, `{"manifest":{…}}`, its fields in the order of
/// [`Manifest`]: the order the signed bytes have (see [`super::sign`]).
pub fn manifest_line(manifest: &Manifest) -> String {
    #[derive(Serialize)]
    struct Line<'a> {
        manifest: &'a Manifest,
    }
    serde_json::to_string(&Line { manifest }).expect("a manifest serializes")
}
