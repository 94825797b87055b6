//! `GET /metrics`: Prometheus text. Queue depths and outcomes are read from the database when
//! scraped (so every process of a PostgreSQL-backed deployment reports the same queue), as
//! gauges of row counts; latencies, RPC errors and rate limits are this process's own.

use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::ratelimit::Limiter;
use crate::engine::metrics::{counts, encode, rows};
use crate::kernel::App;
use crate::store::{PaymentOutcome, StoreError};

/// The metrics in Prometheus' text format.
pub(super) async fn render(app: &App, limiter: &Limiter) -> Result<String, StoreError> {
    let mut registry = Registry::default();
    let transactions = app.store.transaction_counts().await?;
    let by_status: Vec<(String, i64)> = ["signed", "submitted", "mined", "confirmed", "failed"]
        .into_iter()
        .map(|status| {
            let n = transactions
                .iter()
                .find(|(s, _)| s == status)
                .map_or(0, |(_, n)| *n);
            (status.to_owned(), n)
        })
        .collect();
    rows(
        &mut registry,
        "bursar_relayer_transactions",
        "Transactions of the engine by status",
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
        if let (Some(PaymentOutcome::Reverted), Some(code)) = (row.outcome, row.error_code) {
            reverts.push((code, n));
        }
    }
    rows(
        &mut registry,
        "bursar_relayer_payments",
        "Payments by status",
        "status",
        &payments,
    );
    rows(
        &mut registry,
        "bursar_relayer_payment_reverts",
        "Payments that failed on chain, by contract error",
        "error",
        &reverts,
    );
    rows(
        &mut registry,
        "bursar_relayer_webhook_deliveries",
        "Webhook deliveries by status",
        "status",
        &app.store.delivery_counts().await?,
    );
    app.process.deliveries.register(&mut registry);
    rows(
        &mut registry,
        "bursar_relayer_lifecycle_events",
        "Sandbox lifecycle events recorded, by source",
        "source",
        &app.store.lifecycle_counts().await?,
    );

    app.engine.metrics().register(&mut registry);
    app.tasks.register(&mut registry);
    counts(
        &mut registry,
        "bursar_relayer_rate_limited",
        "Requests refused by a rate limit, by bucket kind",
        "bucket",
        &limiter.refused(),
    );
    let buckets = Gauge::<i64>::default();
    buckets.set(limiter.len() as i64);
    registry.register(
        "bursar_relayer_rate_limit_buckets",
        "Rate-limit buckets kept",
        buckets,
    );
    Ok(encode(&registry))
}
