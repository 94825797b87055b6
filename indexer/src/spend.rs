//! Spend: executed payments summed by any of session, owner, counterparty, token and time
//! bucket (hour or day, UTC), over a block or time range — grouped and summed in the database
//! ([`Store::payment_sums`]: exactly, though amounts are 256-bit; from sums kept per hour when
//! the question allows).

use serde_json::{json, Value};

pub use crate::store::Group;
use crate::store::{LogFilter, Store, StoreError};

/// Which payments count.
#[derive(Clone, Debug, Default)]
pub struct SpendFilter {
    /// Blocks, times, session and counterparty (`args` `to`) as the store filters them.
    pub logs: LogFilter,
    /// Only sessions of this owner (EIP-55).
    pub owner: Option<String>,
    /// Only sessions in this token (EIP-55).
    pub token: Option<String>,
}

/// The sums of the payments `filter` selects, grouped by `groups` (none: one total): one row
/// per group, its keys by the groups' names, `total` and `payments`.
pub async fn spend(
    store: &Store,
    groups: &[Group],
    filter: &SpendFilter,
) -> Result<Vec<Value>, StoreError> {
    let mut sums = store
        .payment_sums(
            &filter.logs,
            groups,
            filter.owner.as_deref(),
            filter.token.as_deref(),
        )
        .await?;
    sums.sort_by(|a, b| a.0.cmp(&b.0));
    let rows: Vec<Value> = sums
        .into_iter()
        .map(|(key, total, count)| {
            let mut row = json!({ "total": total.to_string(), "payments": count });
            for (g, k) in groups.iter().zip(key) {
                row[g.name()] = match g {
                    Group::Hour | Group::Day => json!(k.parse::<u64>().unwrap_or_default()),
                    _ => json!(k),
                };
            }
            row
        })
        .collect();
    Ok(rows)
}
