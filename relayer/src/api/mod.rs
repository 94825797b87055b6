//! The HTTP API: thin axum handlers (extract, call one domain function, return a DTO).

use std::sync::Arc;

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::hosts::{self, Host};
use crate::store::Store;
use bursar_client::Client;

/// What the handlers share.
#[derive(Clone)]
pub struct AppState {
    /// The database.
    pub store: Store,
    /// The node.
    pub client: Arc<Client>,
}

/// The API's routes.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .route("/v1/host", get(whoami))
        .with_state(state)
}

/// `GET /health`: 200 when the database and the node answer, 503 (with which one) otherwise.
async fn health(State(s): State<AppState>) -> impl IntoResponse {
    let db = s.store.ping().await.is_ok();
    let chain = s.client.chain_id().await.ok();
    let status = if db && chain.is_some() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        Json(json!({ "database": db, "chainId": chain, "ok": status == StatusCode::OK })),
    )
}

/// `GET /metrics`: Prometheus text.
async fn metrics(State(s): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    let text = crate::metrics::render(&s.store).await?;
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text))
}

/// `GET /v1/host`: the host the key belongs to and its scopes (a way to check a key).
async fn whoami(host: Host) -> Json<Value> {
    Json(json!({
        "id": host.id,
        "name": host.name,
        "scopes": host.scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
    }))
}

impl FromRequestParts<AppState> for Host {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, s: &AppState) -> Result<Self, ApiError> {
        let bearer = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or(ApiError::Unauthorized)?;
        hosts::authenticate(&s.store, bearer.trim()).await
    }
}
