//! Prometheus metrics, read from the database when scraped (so every process of a
//! PostgreSQL-backed deployment reports the same queue).

use std::fmt::Write;

use crate::store::{Store, StoreError};

/// The metrics in Prometheus' text format.
pub async fn render(store: &Store) -> Result<String, StoreError> {
    let mut out = String::new();
    out.push_str("# HELP bursar_relayer_transactions Transactions of the engine by status.\n");
    out.push_str("# TYPE bursar_relayer_transactions gauge\n");
    let counts = store.transaction_counts().await?;
    for status in ["signed", "submitted", "mined", "confirmed", "failed"] {
        let n = counts
            .iter()
            .find(|(s, _)| s == status)
            .map_or(0, |(_, n)| *n);
        let _ = writeln!(
            out,
            "bursar_relayer_transactions{{status=\"{status}\"}} {n}"
        );
    }
    Ok(out)
}
