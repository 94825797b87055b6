//! Prometheus metrics of the follower, in prometheus-client's types (rates such as blocks/s and
//! events/s are `rate()` of the counters), and the node's finality tags the API labels events
//! with.

use std::sync::atomic::{AtomicU64, Ordering};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};

/// The `Content-Type` of [`Metrics::render`]'s text: Prometheus' text format, version 0.0.4.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// What the follower counts as it runs.
#[derive(Debug)]
pub struct Metrics {
    /// The node's head at the last step.
    pub head: Gauge,
    /// The last block ingested.
    pub indexed: Gauge,
    /// Blocks ingested (backfill ranges count every block of the range).
    pub blocks: Counter,
    /// Logs stored.
    pub events: Counter,
    /// Logs stored raw because they did not decode.
    pub undecoded: Counter,
    /// Reorgs met.
    pub reorgs: Counter,
    /// Logs orphaned by reorgs.
    pub orphaned: Counter,
    /// Ranges the node refused (and the indexer shrank).
    pub range_shrinks: Counter,
    /// Steps that failed (node or database) and were retried.
    pub step_errors: Counter,
    /// Of those, the ones the node failed (unreachable, an error answer, a bad answer).
    pub rpc_errors: Counter,
    /// Time writing each batch, in seconds.
    pub db_write: Histogram,
    /// Time building the indexes a bulk load went without, in seconds (0: none built).
    pub index_build: Gauge<f64, AtomicU64>,
    /// The node's `safe` block plus one (0: unknown, the node has no such tag).
    safe: AtomicU64,
    /// The node's `finalized` block plus one (0: unknown).
    finalized: AtomicU64,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            head: Gauge::default(),
            indexed: Gauge::default(),
            blocks: Counter::default(),
            events: Counter::default(),
            undecoded: Counter::default(),
            reorgs: Counter::default(),
            orphaned: Counter::default(),
            range_shrinks: Counter::default(),
            step_errors: Counter::default(),
            rpc_errors: Counter::default(),
            // 1 ms to about 16 s.
            db_write: Histogram::new(exponential_buckets(0.001, 2.0, 15)),
            index_build: Gauge::default(),
            safe: AtomicU64::new(0),
            finalized: AtomicU64::new(0),
        }
    }
}

impl Metrics {
    /// Adds `n` to `counter`.
    pub fn add(counter: &Counter, n: u64) {
        counter.inc_by(n);
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

    /// The Prometheus text exposition ([`CONTENT_TYPE`]).
    pub fn render(&self) -> String {
        let mut r = Registry::default();
        let gauge = |r: &mut Registry, name: &str, help: &str, g: &Gauge| {
            r.register(name, help, g.clone());
        };
        gauge(
            &mut r,
            "bursar_indexer_head_block",
            "The node's head block at the last step",
            &self.head,
        );
        gauge(
            &mut r,
            "bursar_indexer_indexed_block",
            "The last block ingested",
            &self.indexed,
        );
        let lag = Gauge::<i64>::default();
        lag.set((self.head.get() - self.indexed.get()).max(0));
        r.register_with_unit(
            "bursar_indexer_head_lag",
            "Blocks between the node's head and the last ingested",
            Unit::Other("blocks".into()),
            lag,
        );
        for (name, help, counter) in [
            ("bursar_indexer_blocks", "Blocks ingested", &self.blocks),
            ("bursar_indexer_events", "Logs stored", &self.events),
            (
                "bursar_indexer_undecoded_events",
                "Logs stored raw because they did not decode",
                &self.undecoded,
            ),
            ("bursar_indexer_reorgs", "Reorgs met", &self.reorgs),
            (
                "bursar_indexer_orphaned_events",
                "Logs orphaned by reorgs",
                &self.orphaned,
            ),
            (
                "bursar_indexer_range_shrinks",
                "eth_getLogs ranges the node refused",
                &self.range_shrinks,
            ),
            (
                "bursar_indexer_step_errors",
                "Steps that failed (node or database) and were retried",
                &self.step_errors,
            ),
            (
                "bursar_indexer_rpc_errors",
                "Steps the node failed (each retried with backoff)",
                &self.rpc_errors,
            ),
        ] {
            r.register(name, help, counter.clone());
        }
        r.register_with_unit(
            "bursar_indexer_index_build",
            "Time building the indexes a bulk load (a backfill into an empty database) left out",
            Unit::Seconds,
            self.index_build.clone(),
        );
        r.register_with_unit(
            "bursar_indexer_db_write",
            "Time writing a batch",
            Unit::Seconds,
            self.db_write.clone(),
        );
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &r)
            .expect("writing to a String cannot fail");
        out
    }
}
