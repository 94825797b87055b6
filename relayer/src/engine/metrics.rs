//! Prometheus metrics this process measures (latencies, RPC errors, deliveries received), in
//! prometheus-client's types; the API's `/metrics` registers them beside what the database
//! counts and writes the text format ([`encode`]).

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

/// Upper bounds (seconds) of the latency histograms' buckets.
const BUCKETS: [f64; 12] = [
    0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];

/// The `Content-Type` of [`encode`]'s text: Prometheus' text format, version 0.0.4.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// One label's name and value.
type Label = [(&'static str, String); 1];

/// What the engine measures as it runs.
#[derive(Debug)]
pub struct EngineMetrics {
    /// From a transaction's storing to the node accepting it, in seconds.
    pub submit_latency: Histogram,
    /// From a transaction's storing to its receipt, in seconds.
    pub mine_latency: Histogram,
    /// Node errors met by the engine.
    pub rpc_errors: Counter,
}

impl Default for EngineMetrics {
    fn default() -> Self {
        EngineMetrics {
            submit_latency: Histogram::new(BUCKETS),
            mine_latency: Histogram::new(BUCKETS),
            rpc_errors: Counter::default(),
        }
    }
}

impl EngineMetrics {
    /// Registers them in `registry` (they stay shared with the engine).
    pub fn register(&self, registry: &mut Registry) {
        registry.register_with_unit(
            "bursar_relayer_submit_latency",
            "From storing a transaction to the node accepting it",
            Unit::Seconds,
            self.submit_latency.clone(),
        );
        registry.register_with_unit(
            "bursar_relayer_mine_latency",
            "From storing a transaction to its receipt",
            Unit::Seconds,
            self.mine_latency.clone(),
        );
        registry.register(
            "bursar_relayer_rpc_errors",
            "Node errors met by the engine",
            self.rpc_errors.clone(),
        );
    }
}

/// Lifecycle deliveries this process received (providers' webhooks, pollers' readings, hosts'
/// reports), by source and outcome: `accepted`, `duplicate`, or why one was refused.
#[derive(Debug, Default)]
pub struct Deliveries(Family<[(&'static str, String); 2], Counter>);

impl Deliveries {
    /// Counts one delivery from `source` with `outcome`.
    pub fn count(&self, source: &str, outcome: &'static str) {
        let labels = [
            ("source", source.to_owned()),
            ("outcome", outcome.to_owned()),
        ];
        self.0.get_or_create(&labels).inc();
    }

    /// Registers the counts in `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "bursar_relayer_lifecycle_deliveries",
            "Sandbox lifecycle deliveries by source and outcome",
            self.0.clone(),
        );
    }
}

/// Registers gauge `name`, one sample per `(label value, n)`: how many rows the database
/// holds of each, read when scraped.
pub fn rows(
    registry: &mut Registry,
    name: &str,
    help: &str,
    label: &'static str,
    values: &[(String, i64)],
) {
    let family = Family::<Label, Gauge>::default();
    for (value, n) in values {
        family.get_or_create(&[(label, value.clone())]).set(*n);
    }
    registry.register(name, help, family);
}

/// Registers counter `name`, one sample per `(label value, n)`: counts kept elsewhere.
pub fn counts(
    registry: &mut Registry,
    name: &str,
    help: &str,
    label: &'static str,
    values: &[(&str, u64)],
) {
    let family = Family::<Label, Counter>::default();
    for (value, n) in values {
        family
            .get_or_create(&[(label, (*value).to_owned())])
            .inc_by(*n);
    }
    registry.register(name, help, family);
}

/// `registry` in Prometheus' text format ([`CONTENT_TYPE`]).
pub fn encode(registry: &Registry) -> String {
    let mut out = String::new();
    prometheus_client::encoding::prometheus_text::encode(&mut out, registry)
        .expect("writing to a String cannot fail");
    out
}
