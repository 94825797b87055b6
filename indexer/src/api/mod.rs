//! The HTTP API: thin handlers that take their parameters ([`params`]), ask one domain function
//! or the store, and answer JSON. Errors are `{code, message, details}`; a bad query parameter
//! is a 400 naming it.
//!
//! Every list and record answers as of a block (`asOfBlock` or `asOfTime`; the last block
//! indexed by default), counts canonical rows only unless `includeOrphaned=true`, and labels
//! each event with its finality (`latest`, `safe` or `finalized`, by the node's block tags).

mod params;
mod records;
mod sessions;
mod spend;

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::Query;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::metrics::Metrics;
use crate::store::{LogRow, Store, StoreError};
pub use params::{AsOf, Params};

/// What the handlers share.
#[derive(Clone, Debug)]
pub struct State {
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
type S = axum::extract::State<State>;
/// The handlers' query extractor.
type Q = Query<HashMap<String, String>>;

/// The API's routes.
pub fn router(state: State) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/metrics", get(|s: S| async move { s.metrics.render() }))
        .route(
            "/openapi.json",
            get(|| async { Json(crate::openapi::document()) }),
        )
        .route("/v1/events", get(sessions::events))
        .route("/v1/sessions", get(sessions::list))
        .route("/v1/sessions/{id}", get(sessions::one))
        .route("/v1/sessions/{id}/timeline", get(sessions::timeline))
        .route("/v1/sessions/{id}/export", get(sessions::export))
        .route("/v1/spend", get(spend::spend))
        .route("/v1/receipts", get(records::receipts))
        .route("/v1/receipts/{id}", get(records::receipt))
        .route("/v1/provenance", get(records::provenance))
        .route("/v1/provenance/{id}", get(records::record))
        .route("/v1/provenance/{id}/lineage", get(records::lineage))
        .with_state(state)
}

/// Why a request failed.
#[derive(Debug)]
pub enum ApiError {
    /// A query parameter is malformed or unknown.
    BadParameter {
        /// Which.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// Nothing with this id.
    NotFound,
    /// The database cannot be reached now.
    Unavailable,
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        tracing::error!(error = %e, "store error");
        ApiError::Unavailable
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, body) = match self {
            ApiError::BadParameter { name, message } => (
                StatusCode::BAD_REQUEST,
                json!({ "code": "invalid_parameter", "message": message, "details": { "parameter": name } }),
            ),
            ApiError::NotFound => (
                StatusCode::NOT_FOUND,
                json!({ "code": "not_found", "message": "not found", "details": {} }),
            ),
            ApiError::Unavailable => (
                StatusCode::SERVICE_UNAVAILABLE,
                json!({ "code": "unavailable", "message": "the database is unavailable; retry later", "details": {} }),
            ),
        };
        (status, Json(body)).into_response()
    }
}

/// `GET /health`: the chain, how far indexing got, how far behind the head, the node's safe
/// and finalized blocks, and the address that signs audit exports.
async fn health(s: S) -> Result<Json<Value>, ApiError> {
    let checkpoint = s.store.checkpoint().await?;
    let head = s.metrics.head.load(std::sync::atomic::Ordering::Relaxed);
    let indexed = checkpoint.as_ref().map_or(0, |(n, _)| *n);
    let (safe, finalized) = s.metrics.tags();
    Ok(Json(json!({
        "status": "ok",
        "chainId": s.chain_id,
        "headBlock": head,
        "headLag": head.saturating_sub(indexed),
        "indexedBlock": checkpoint.as_ref().map(|(n, _)| n),
        "indexedBlockHash": checkpoint.map(|(_, h)| h),
        "safeBlock": safe,
        "finalizedBlock": finalized,
        "exportSigner": s.exporter.signer().to_checksum(None),
    })))
}

/// The cursor of the page after `rows`, when the page was full.
fn cursor(rows: &[LogRow], limit: u64) -> Option<String> {
    (rows.len() as u64 == limit)
        .then(|| {
            rows.last()
                .map(|r| format!("{}:{}", r.block_number, r.log_index))
        })
        .flatten()
}

/// Event `r` as the API shows it.
fn view(metrics: &Metrics, r: &LogRow) -> Value {
    let address = r
        .address
        .parse::<alloy_primitives::Address>()
        .map_or(r.address.clone(), |a| a.to_checksum(None));
    let mut v = crate::records::chain(metrics, r);
    let fields = [
        ("chainId", json!(r.chain_id)),
        ("contract", json!(r.contract)),
        ("address", json!(address)),
        ("event", json!(r.event)),
        ("args", json!(r.args)),
        ("topics", json!(r.topics)),
        ("data", json!(r.data)),
        ("decodeError", json!(r.decode_error)),
        ("sessionId", json!(r.session_id)),
        ("canonical", json!(r.canonical)),
        ("orphanedBy", json!(r.orphaned_by)),
    ];
    for (name, value) in fields {
        v[name] = value;
    }
    v
}
