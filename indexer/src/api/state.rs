//! What the handlers share, and how they take it and their query.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::Query;

use crate::metrics::Metrics;
use crate::store::Store;

/// What the handlers share.
#[derive(Clone, Debug)]
pub struct AppState {
    /// The database.
    pub store: Store,
    /// The chain followed (for the time of an `asOfBlock` the store does not hold).
    pub client: Arc<bursar_client::Client>,
    /// The chain's id.
    pub chain_id: u64,
    /// The follower's counters, with the node's safe and finalized blocks.
    pub metrics: Arc<Metrics>,
    /// What signs the audit exports.
    pub exporter: Arc<crate::audit::Exporter>,
}

/// The handlers' state extractor.
pub(super) type Shared = axum::extract::State<AppState>;
/// The handlers' query extractor: every parameter, checked by [`super::params`].
pub(super) type QueryMap = Query<HashMap<String, String>>;
