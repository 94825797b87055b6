//! `GET /metrics`: Prometheus text. Queue depths and outcomes are read from the database when
//! scraped (so every process of a PostgreSQL-backed deployment reports the same queue);
//! latencies, RPC errors and rate limits are this process's own.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use super::ratelimit::Limiter;
use crate::kernel::App;
use crate::metrics::gauge;
use crate::store::StoreError;

/// The metrics in Prometheus' text format.
pub(super) async fn render(app: &App, limiter: &Limiter) -> Result<String, StoreError> {
    let mut out = String::new();
    let counts = app.store.transaction_counts().await?;
    let by_status: Vec<(String, i64)> = ["signed", "submitted", "mined", "confirmed", "failed"]
        .into_iter()
        .map(|status| {
            let n = counts
                .iter()
                .find(|(s, _)| s == status)
                .map_or(0, |(_, n)| *n);
            (status.to_owned(), n)
        })
        .collect();
    gauge(
        &mut out,
        "bursar_relayer_transactions",
        "Transactions of the engine by status.",
        "status",
        &by_status,
    );

    let mut payments: Vec<(String, i64)> = Vec::new();
    let mut reverts: Vec<(String, i64)> = Vec::new();
    for (row, n) in app.store.payment_status_counts().await? {
        let status = row.status().as_str().to_owned();
        match payments.iter_mut().find(|(s, _)| *s == status) {
            Some((_, total)) => *total += n,
            None => payments.push((status, n)),
        }
        if let (Some("reverted"), Some(code)) = (row.outcome.as_deref(), row.error_code) {
            reverts.push((code, n));
        }
    }
    gauge(
        &mut out,
        "bursar_relayer_payments",
        "Payments by status.",
        "status",
        &payments,
    );
    gauge(
        &mut out,
        "bursar_relayer_payment_reverts",
        "Payments that failed on chain, by contract error.",
        "error",
        &reverts,
    );
    let deliveries = app.store.delivery_counts().await?;
    gauge(
        &mut out,
        "bursar_relayer_webhook_deliveries",
        "Webhook deliveries by status.",
        "status",
        &deliveries,
    );

    app.deliveries.render(&mut out);
    gauge(
        &mut out,
        "bursar_relayer_lifecycle_events",
        "Sandbox lifecycle events recorded, by source.",
        "source",
        &app.store.lifecycle_counts().await?,
    );

    let m = app.engine.metrics();
    m.submit_latency.render(
        &mut out,
        "bursar_relayer_submit_latency_seconds",
        "From storing a transaction to the node accepting it.",
    );
    m.mine_latency.render(
        &mut out,
        "bursar_relayer_mine_latency_seconds",
        "From storing a transaction to its receipt.",
    );
    let _ = writeln!(
        out,
        "# HELP bursar_relayer_rpc_errors_total Node errors met by the engine.\n# TYPE bursar_relayer_rpc_errors_total counter\nbursar_relayer_rpc_errors_total {}",
        m.rpc_errors.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        out,
        "# HELP bursar_relayer_rate_limited_total Requests refused by a rate limit, by bucket kind.\n# TYPE bursar_relayer_rate_limited_total counter"
    );
    for (kind, n) in limiter.refused() {
        let _ = writeln!(
            out,
            "bursar_relayer_rate_limited_total{{bucket=\"{kind}\"}} {n}"
        );
    }
    let _ = writeln!(
        out,
        "# HELP bursar_relayer_rate_limit_buckets Rate-limit buckets kept.\n# TYPE bursar_relayer_rate_limit_buckets gauge\nbursar_relayer_rate_limit_buckets {}",
        limiter.len()
    );
    Ok(out)
}
