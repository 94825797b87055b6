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

/// Events `rows` as the API shows them. A page's logs mostly come from one contract: its
/// checksummed address (a keccak-256) is computed once, and each row's decoded arguments are
/// moved into the answer rather than copied.
pub(super) fn views(metrics: &Metrics, rows: Vec<LogRow>) -> Vec<Event> {
    let mut last: Option<(String, String)> = None;
    rows.into_iter()
        .map(|r| {
            let address = match &last {
                Some((raw, checksummed)) if *raw == r.address => checksummed.clone(),
                _ => {
                    let checksummed = r
                        .address
                        .parse::<alloy_primitives::Address>()
                        .map_or(r.address.clone(), |a| a.to_checksum(None));
                    last = Some((r.address.clone(), checksummed.clone()));
                    checksummed
                }
            };
            view(metrics, r, address)
        })
        .collect()
}

fn view(metrics: &Metrics, r: LogRow, address: String) -> Event {
    Event {
        at: crate::records::chain(metrics, &r),
        chain_id: r.chain_id,
        contract: r.contract,
        address,
        event: r.event,
        args: r.args,
        topics: r.topics.iter().map(|t| t.to_string()).collect(),
        data: r.data.to_string(),
        decode_error: r.decode_error,
        session_id: r.session_id,
        canonical: r.canonical,
        orphaned_by: r.orphaned_by,
    }
}
