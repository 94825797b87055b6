//! Prometheus metrics. Queue depths and outcomes are read from the database when scraped (so
//! every process of a PostgreSQL-backed deployment reports the same queue); latencies and RPC
//! errors are this process's own.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::store::StoreError;
use crate::Core;

/// Upper bounds (seconds) of the latency histograms' buckets.
const BUCKETS: [f64; 12] = [
    0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];

/// A Prometheus histogram of durations.
#[derive(Debug, Default)]
pub struct Histogram {
    buckets: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

impl Histogram {
    /// Records one duration.
    pub fn observe(&self, seconds: f64) {
        for (bound, bucket) in BUCKETS.iter().zip(&self.buckets) {
            if seconds <= *bound {
                bucket.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_micros
            .fetch_add((seconds.max(0.0) * 1e6) as u64, Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (bound, bucket) in BUCKETS.iter().zip(&self.buckets) {
            let n = bucket.load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {n}");
        }
        let count = self.count.load(Ordering::Relaxed);
        let sum = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let _ = writeln!(out, "{name}_sum {sum}\n{name}_count {count}");
    }
}

/// What the engine measures as it runs.
#[derive(Debug, Default)]
pub struct EngineMetrics {
    /// From a transaction's storing to the node accepting it.
    pub submit_latency: Histogram,
    /// From a transaction's storing to its receipt.
    pub mine_latency: Histogram,
    /// Node errors met by the engine.
    pub rpc_errors: AtomicU64,
}

/// Lifecycle deliveries this process received (providers' webhooks, pollers' readings, hosts'
/// reports), by source and outcome: `accepted`, `duplicate`, or why one was refused.
#[derive(Debug, Default)]
pub struct Deliveries(std::sync::Mutex<std::collections::BTreeMap<(String, &'static str), u64>>);

impl Deliveries {
    /// Counts one delivery from `source` with `outcome`.
    pub fn count(&self, source: &str, outcome: &'static str) {
        let mut counts = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *counts.entry((source.to_owned(), outcome)).or_default() += 1;
    }

    fn render(&self, out: &mut String) {
        let name = "bursar_relayer_lifecycle_deliveries_total";
        let _ = writeln!(
            out,
            "# HELP {name} Sandbox lifecycle deliveries by source and outcome.\n# TYPE {name} counter"
        );
        let counts = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for ((source, outcome), n) in counts.iter() {
            let _ = writeln!(
                out,
                "{name}{{source=\"{source}\",outcome=\"{outcome}\"}} {n}"
            );
        }
    }
}

fn gauge(out: &mut String, name: &str, help: &str, label: &str, values: &[(String, i64)]) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
    for (value, n) in values {
        let _ = writeln!(out, "{name}{{{label}=\"{value}\"}} {n}");
    }
}

/// The metrics in Prometheus' text format.
pub async fn render(core: &Core) -> Result<String, StoreError> {
    let mut out = String::new();
    let counts = core.store.transaction_counts().await?;
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
    for (row, n) in core.store.payment_status_counts().await? {
        let status = crate::payments::status(&row).to_owned();
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
    let deliveries = core.store.delivery_counts().await?;
    gauge(
        &mut out,
        "bursar_relayer_webhook_deliveries",
        "Webhook deliveries by status.",
        "status",
        &deliveries,
    );

    core.deliveries.render(&mut out);
    gauge(
        &mut out,
        "bursar_relayer_lifecycle_events",
        "Sandbox lifecycle events recorded, by source.",
        "source",
        &core.store.lifecycle_counts().await?,
    );

    let m = core.engine.metrics();
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
    for (kind, n) in core.limiter.refused() {
        let _ = writeln!(
            out,
            "bursar_relayer_rate_limited_total{{bucket=\"{kind}\"}} {n}"
        );
    }
    let _ = writeln!(
        out,
        "# HELP bursar_relayer_rate_limit_buckets Rate-limit buckets kept.\n# TYPE bursar_relayer_rate_limit_buckets gauge\nbursar_relayer_rate_limit_buckets {}",
        core.limiter.len()
    );
    Ok(out)
}
