//! The HTTP API: thin axum handlers (extract, call one domain function, return a DTO).
//!
//! * [`sessions`] — hosts' session routes and sandboxes' heartbeats.
//! * [`payments`] — sandboxes' payments and provenance.
//! * [`webhooks`] — hosts' outbound webhook endpoints and deliveries.
//! * [`lifecycle`] — providers' lifecycle webhooks and hosts' own lifecycle reports.
//! * [`x402`] — the x402 facilitator, and sandboxes' payments of 402 answers.
//! * [`openapi`] — the OpenAPI document at `/openapi.json`.
//! * [`idempotency`] — `Idempotency-Key` on every POST.
//! * [`auth`] — who is calling (a host key, a capability token, or an address), authenticated
//!   once per request, and their rate limits ([`ratelimit`]).
//! * [`extract`] — the caller for handlers, and JSON bodies with the API's own errors.

mod auth;
mod error;
mod extract;
mod idempotency;
mod lifecycle;
mod metrics;
pub mod openapi;
mod payments;
mod ratelimit;
mod sessions;
mod state;
mod webhooks;
mod x402;

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

pub use auth::Principal;
pub use extract::{Body, Caller, Sandbox};
pub use ratelimit::Limiter;
pub use state::{AppState, MAX_BODY};

use crate::hosts::Host;
use crate::kernel::App;
use crate::kernel::Error;

/// Serves the API on `listener` until `stop` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Arc<App>,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) {
    // The peer's address: anonymous callers and failed authentications are limited by it.
    let service = router(app).into_make_service_with_connect_info::<std::net::SocketAddr>();
    if let Err(e) = axum::serve(listener, service)
        .with_graceful_shutdown(stop)
        .await
    {
        tracing::error!(error = %e, "API server failed");
    }
}

/// The API's routes.
pub fn router(state: AppState) -> Router {
    let limiter = Arc::new(Limiter::default());
    Router::new()
        .route("/health", get(health))
        .route(
            "/metrics",
            get({
                let limiter = limiter.clone();
                move |s: State<AppState>| metrics(s, limiter)
            }),
        )
        .route("/v1/host", get(whoami))
        .route(
            "/v1/host/policy",
            get(lifecycle::policy).put(lifecycle::set_policy),
        )
        .route("/openapi.json", get(|| async { Json(openapi::document()) }))
        .route("/v1/sessions/prepare", post(sessions::prepare))
        .route("/v1/sessions/register", post(sessions::register))
        .route("/v1/sessions", post(sessions::open).get(sessions::list))
        .route("/v1/sessions/{id}", get(sessions::get))
        .route("/v1/sessions/{id}/revoke", post(sessions::revoke))
        .route("/v1/sessions/{id}/close", post(sessions::close))
        .route("/v1/sessions/{id}/heartbeat", post(sessions::heartbeat))
        .route("/v1/sessions/{id}/lifecycle", post(lifecycle::report))
        .route(
            "/v1/hosts/{host_id}/providers/{provider}/webhook",
            post(lifecycle::webhook),
        )
        .route(
            "/v1/sessions/{id}/pending/{pending_id}/decision",
            get(sessions::decision_to_sign).post(sessions::decide),
        )
        .route("/v1/payments", post(payments::pay).get(payments::list))
        .route("/v1/payments/{id}", get(payments::get))
        .route("/v1/provenance", post(payments::record_provenance))
        .route("/v1/provenance/{id}", get(payments::get_provenance))
        .route("/x402/supported", get(x402::supported))
        .route("/x402/verify", post(x402::verify))
        .route("/x402/settle", post(x402::settle))
        .route("/v1/x402/pay", post(x402::pay))
        .route("/v1/webhooks", post(webhooks::create).get(webhooks::list))
        .route("/v1/webhooks/{id}", axum::routing::delete(webhooks::delete))
        .route("/v1/webhooks/{id}/deliveries", get(webhooks::deliveries))
        .route(
            "/v1/webhooks/{id}/deliveries/{message_id}/replay",
            post(webhooks::replay),
        )
        // Inside out: idempotency runs on routed requests only, after authentication.
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            idempotency::layer,
        ))
        .layer(axum::middleware::from_fn_with_state(
            (state.clone(), limiter),
            auth::layer,
        ))
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
async fn metrics(
    State(s): State<AppState>,
    limiter: Arc<Limiter>,
) -> Result<impl IntoResponse, Error> {
    let text = metrics::render(&s, &limiter).await?;
    Ok(([(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)], text))
}

/// `GET /v1/host`: the host the key belongs to and its scopes (a way to check a key).
async fn whoami(host: Host) -> Json<Value> {
    Json(json!({
        "id": host.id,
        "name": host.name,
        "scopes": host.scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
    }))
}
