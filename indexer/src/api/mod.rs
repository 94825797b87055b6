//! The HTTP API: thin handlers that take their parameters ([`params`]), ask one domain function
//! or the store, and answer JSON. Errors are `{code, message, details}`; a bad query parameter
//! is a 400 naming it.
//!
//! Every list and record answers as of a block (`asOfBlock` or `asOfTime`; the last block
//! indexed by default), counts canonical rows only unless `includeOrphaned=true`, and labels
//! each event with its finality (`latest`, `safe` or `finalized`, by the node's block tags).

mod error;
mod params;
mod records;
mod rows;
mod sessions;
mod spend;
mod state;

use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

pub use error::ApiError;
pub use params::{AsOf, Params};
pub use state::AppState;

use state::Shared;

/// Serves the API on `listener` until `stop` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) {
    if let Err(e) = axum::serve(listener, router(state))
        .with_graceful_shutdown(stop)
        .await
    {
        tracing::error!(error = %e, "API server failed");
    }
}

/// The API's routes.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/health", get(health))
        .route(
            "/metrics",
            get(|s: Shared| async move {
                let content_type = [(
                    axum::http::header::CONTENT_TYPE,
                    crate::metrics::CONTENT_TYPE,
                )];
                (content_type, s.metrics.render())
            }),
        )
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

/// `GET /health`: the chain, how far indexing got, how far behind the head, the node's safe
/// and finalized blocks, and the address that signs audit exports.
async fn health(s: Shared) -> Result<Json<Value>, ApiError> {
    let checkpoint = s.store.checkpoint().await?;
    let head = s.metrics.head.get() as u64;
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
