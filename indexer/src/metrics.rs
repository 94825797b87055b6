//! Prometheus metrics of the follower (rates such as blocks/s and events/s are `rate()` of the
//! counters).

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the follower counts as it runs.
#[derive(Debug, Default)]
pub struct Metrics {
    /// The node's head at the last step.
    pub head: AtomicU64,
    /// The last block ingested.
    pub indexed: AtomicU64,
    /// Blocks ingested (backfill ranges count every block of the range).
    pub blocks: AtomicU64,
    /// Logs stored.
    pub events: AtomicU64,
    /// Logs stored raw because they did not decode.
    pub undecoded: AtomicU64,
    /// Reorgs met.
    pub reorgs: AtomicU64,
    /// Logs orphaned by reorgs.
    pub orphaned: AtomicU64,
    /// Ranges the node refused (and the indexer shrank).
    pub range_shrinks: AtomicU64,
    /// Steps that failed (node or database) and were retried.
    pub step_errors: AtomicU64,
    /// Of those, the ones the node failed (unreachable, an error answer, a bad answer).
    pub rpc_errors: AtomicU64,
    /// Time spent writing batches, in microseconds, and how many.
    pub write_micros: AtomicU64,
    /// Batches written.
    pub writes: AtomicU64,
    /// Time building the indexes a bulk load went without, in microseconds (0: none built).
    pub index_build_micros: AtomicU64,
    /// The node's `safe` block plus one (0: unknown, the node has no such tag).
    pub safe: AtomicU64,
    /// The node's `finalized` block plus one (0: unknown).
    pub finalized: AtomicU64,
}

impl Metrics {
    /// Adds `n` to `counter`.
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// The node's safe and finalized blocks, as last read.
    pub fn tags(&self) -> (Option<u64>, Option<u64>) {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed).checked_sub(1);
        (get(&self.safe), get(&self.finalized))
    }

    /// Records the node's safe and finalized blocks.
    pub fn set_tags(&self, safe: Option<u64>, finalized: Option<u64>) {
        self.safe
            .store(safe.map_or(0, |n| n + 1), Ordering::Relaxed);
        self.finalized
            .store(finalized.map_or(0, |n| n + 1), Ordering::Relaxed);
    }

    /// How settled `block` is by the node's tags: `finalized`, `safe` or `latest`.
    pub fn finality(&self, block: u64) -> &'static str {
        match self.tags() {
            (_, Some(f)) if block <= f => "finalized",
            (Some(s), _) if block <= s => "safe",
            _ => "latest",
        }
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut out = String::new();
        let mut metric = |name: &str, kind: &str, help: &str, value: String| {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
            );
        };
        let (head, indexed) = (get(&self.head), get(&self.indexed));
        metric(
            "bursar_indexer_head_block",
            "gauge",
            "The node's head block at the last step.",
            head.to_string(),
        );
        metric(
            "bursar_indexer_indexed_block",
            "gauge",
            "The last block ingested.",
            indexed.to_string(),
        );
        metric(
            "bursar_indexer_head_lag_blocks",
            "gauge",
            "Blocks between the node's head and the last ingested.",
            head.saturating_sub(indexed).to_string(),
        );
        metric(
            "bursar_indexer_blocks_total",
            "counter",
            "Blocks ingested.",
            get(&self.blocks).to_string(),
        );
        metric(
            "bursar_indexer_events_total",
            "counter",
            "Logs stored.",
            get(&self.events).to_string(),
        );
        metric(
            "bursar_indexer_undecoded_events_total",
            "counter",
            "Logs stored raw because they did not decode.",
            get(&self.undecoded).to_string(),
        );
        metric(
            "bursar_indexer_reorgs_total",
            "counter",
            "Reorgs met.",
            get(&self.reorgs).to_string(),
        );
        metric(
            "bursar_indexer_orphaned_events_total",
            "counter",
            "Logs orphaned by reorgs.",
            get(&self.orphaned).to_string(),
        );
        metric(
            "bursar_indexer_range_shrinks_total",
            "counter",
            "eth_getLogs ranges the node refused.",
            get(&self.range_shrinks).to_string(),
        );
        metric(
            "bursar_indexer_step_errors_total",
            "counter",
            "Steps that failed (node or database) and were retried.",
            get(&self.step_errors).to_string(),
        );
        metric(
            "bursar_indexer_rpc_errors_total",
            "counter",
            "Steps the node failed (each retried with backoff).",
            get(&self.rpc_errors).to_string(),
        );
        metric(
            "bursar_indexer_index_build_seconds",
            "gauge",
            "Time building the indexes a bulk load (a backfill into an empty database) left out.",
            format!("{}", get(&self.index_build_micros) as f64 / 1e6),
        );
        let _ = writeln!(
            out,
            "# HELP bursar_indexer_db_write_seconds Time writing batches.\n\
             # TYPE bursar_indexer_db_write_seconds summary\n\
             bursar_indexer_db_write_seconds_sum {}\nbursar_indexer_db_write_seconds_count {}",
            get(&self.write_micros) as f64 / 1e6,
            get(&self.writes)
        );
        out
    }
}
