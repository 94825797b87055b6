//! Prometheus metrics this process measures (latencies, RPC errors, deliveries received), and
//! the text format's writers; the API's `/metrics` adds what the database counts.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

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

    /// Writes the histogram as `name` with `help`.
    pub fn render(&self, out: &mut String, name: &str, help: &str) {
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

    /// Writes the counts.
    pub fn render(&self, out: &mut String) {
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

/// Writes gauge `name` with one sample per `(label value, n)`.
pub fn gauge(out: &mut String, name: &str, help: &str, label: &str, values: &[(String, i64)]) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
    for (value, n) in values {
        let _ = writeln!(out, "{name}{{{label}=\"{value}\"}} {n}");
    }
}
