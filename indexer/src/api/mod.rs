//! The HTTP API: thin handlers that take their parameters ([`params`]), ask one domain function
//! or the store, and answer JSON. Errors are `{code, message, details}`; a bad query parameter
//! is a 400 naming it.
//!
//! Every list and record answers as of a block (`asOfBlock` or `asOfTime`; the last block
//! indexed by default), counts canonical rows only unless `includeOrphaned=true`, and labels
//! each event with its finality (`latest`, `safe` or `finalized`, by the node's block tags).

mod agent_page;
mod agents;
mod dto;
mod error;
mod openapi;
mod pages;
mod params;
mod records;
mod rows;
mod sessions;
mod spend;
mod state;

use std::sync::Arc;

use axum::routing::get;
use axum::{Json, Router};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use error::ApiError;
pub use params::{AsOf, Params};
pub use state::AppState;

use dto::Health;
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

/// The API's routes, each registered with its OpenAPI operation; the document is served at
/// `/openapi.json`.
pub fn router(state: AppState) -> Router {
    let (routes, doc) = routes().split_for_parts();
    let doc = Arc::new(openapi::finish(doc));
    routes
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
            get(move || {
                let doc = doc.clone();
                async move { Json(doc) }
            }),
        )
        .merge(pages::routes())
        .route("/ui/agents/{id}", get(agent_page::agent))
        .with_state(state)
}

/// The OpenAPI document the API serves.
pub fn document() -> utoipa::openapi::OpenApi {
    openapi::finish(routes().into_openapi())
}

/// The routes [`router`] adds to the documented ones, documented here.
#[derive(OpenApi)]
#[openapi(paths(metrics, openapi_json))]
struct Added;

/// The documented routes.
fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(openapi::Doc::openapi().merge_from(Added::openapi()))
        .routes(routes!(health))
        .routes(routes!(sessions::events))
        .routes(routes!(sessions::list))
        .routes(routes!(sessions::one))
        .routes(routes!(sessions::timeline))
        .routes(routes!(sessions::export))
        .routes(routes!(spend::spend))
        .routes(routes!(records::receipts))
        .routes(routes!(records::receipt))
        .routes(routes!(records::provenance))
        .routes(routes!(records::record))
        .routes(routes!(records::lineage))
        .routes(routes!(agents::agent))
}

/// How far indexing got, how far behind the head, the node's safe and finalized blocks, and
/// the address that signs audit exports.
#[utoipa::path(get, path = "/health", operation_id = "health", tag = "service",
    responses((status = 200, description = "Serving", body = Health)))]
async fn health(s: Shared) -> Result<Json<Health>, ApiError> {
    let checkpoint = s.store.checkpoint().await?;
    let head = s.metrics.head.get() as u64;
    let indexed = checkpoint.as_ref().map_or(0, |(n, _)| *n);
    let (safe_block, finalized_block) = s.metrics.tags();
    Ok(Json(Health {
        status: "ok",
        chain_id: s.chain_id,
        head_block: head,
        head_lag: head.saturating_sub(indexed),
        indexed_block: checkpoint.as_ref().map(|(n, _)| *n),
        indexed_block_hash: checkpoint.map(|(_, h)| h),
        safe_block,
        finalized_block,
        export_signer: s.exporter.signer().to_checksum(None),
    }))
}

/// Prometheus metrics (text exposition 0.0.4).
#[utoipa::path(get, path = "/metrics", operation_id = "metrics", tag = "service",
    responses((status = 200, description = "Prometheus text", content_type = "text/plain", body = String)))]
#[allow(dead_code)] // Documents the route `router` serves.
fn metrics() {}

/// This document.
#[utoipa::path(get, path = "/openapi.json", operation_id = "openapi", tag = "service",
    responses((status = 200, description = "OpenAPI 3.1", body = Object)))]
#[allow(dead_code)] // Documents the route `router` serves with the document it built.
fn openapi_json() {}
