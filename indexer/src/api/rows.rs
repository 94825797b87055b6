//! Events as the API shows them, and the cursor of a page of them.

use super::dto::Event;
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
pub(super) fn view(metrics: &Metrics, r: &LogRow) -> Event {
    let address = r
        .address
        .parse::<alloy_primitives::Address>()
        .map_or(r.address.clone(), |a| a.to_checksum(None));
    Event {
        at: crate::records::chain(metrics, r),
        chain_id: r.chain_id,
        contract: r.contract.clone(),
        address,
        event: r.event.clone(),
        args: r.args.clone(),
        topics: r.topics.iter().map(|t| t.to_string()).collect(),
        data: r.data.to_string(),
        decode_error: r.decode_error.clone(),
        session_id: r.session_id.clone(),
        canonical: r.canonical,
        orphaned_by: r.orphaned_by.clone(),
    }
}
