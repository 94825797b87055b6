//! Events as the API shows them, and the cursor of a page of them.

use serde_json::{json, Value};

use crate::metrics::Metrics;
use crate::store::LogRow;

/// The cursor of the page after `rows`, when the page was full.
pub(super) fn cursor(rows: &[LogRow], limit: u64) -> Option<String> {
    (rows.len() as u64 == limit)
        .then(|| {
            rows.last()
                .map(|r| format!("{}:{}", r.block_number, r.log_index))
        })
        .flatten()
}

/// Event `r` as the API shows it.
pub(super) fn view(metrics: &Metrics, r: &LogRow) -> Value {
    let address = r
        .address
        .parse::<alloy_primitives::Address>()
        .map_or(r.address.clone(), |a| a.to_checksum(None));
    let mut v = crate::records::chain(metrics, r);
    let fields = [
        ("chainId", json!(r.chain_id)),
        ("contract", json!(r.contract)),
        ("address", json!(address)),
        ("event", json!(r.event)),
        ("args", json!(r.args)),
        ("topics", json!(r.topics)),
        ("data", json!(r.data)),
        ("decodeError", json!(r.decode_error)),
        ("sessionId", json!(r.session_id)),
        ("canonical", json!(r.canonical)),
        ("orphanedBy", json!(r.orphaned_by)),
    ];
    for (name, value) in fields {
        v[name] = value;
    }
    v
}
