//! The HTTP API: thin axum handlers (extract, call one domain function, return a DTO).
//!
//! * [`sessions`] — hosts' session routes and sandboxes' heartbeats.
//! * [`payments`] — sandboxes' payments, provenance and feedback.
//! * [`agents`] — ERC-8004 agents registered for owners, and their registration files.
//! * [`webhooks`] — hosts' outbound webhook endpoints and deliveries.
//! * [`lifecycle`] — providers' lifecycle webhooks and hosts' own lifecycle reports.
//! * [`x402`] — the x402 facilitator, and sandboxes' payments of 402 answers.
//! * [`openapi`] — the OpenAPI document at `/openapi.json`, derived from the handlers.
//! * [`idempotency`] — `Idempotency-Key` on every POST.
//! * [`auth`] — who is calling (a host key, a capability token, or an address), authenticated
//!   once per request, and their rate limits ([`ratelimit`]).
//! * [`extract`] — the caller for handlers, and JSON bodies with the API's own errors.

mod agents;
mod allowlists;
mod auth;
mod error;
mod extract;
mod idempotency;
mod lifecycle;
mod mcp;
mod metrics;
mod openapi;
mod pages;
mod payments;
mod ratelimit;
mod sessions;
mod state;
mod webhooks;
mod x402;

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use utoipa::{OpenApi, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::engine::tasks::TaskHealth;

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

/// The API's routes, each registered with its OpenAPI operation; the document is served at
/// `/openapi.json`; agents' MCP server at `/mcp`.
pub fn router(state: AppState) -> Router {
    let limiter = Arc::new(Limiter::default());
    let (routes, doc) = routes().split_for_parts();
    let doc = Arc::new(openapi::finish(doc));
    let (mcp, sessions) = mcp::service(state.clone(), state.settings.mcp_sessions);
    routes
        .route(
            "/metrics",
            get({
                let limiter = limiter.clone();
                move |s: State<AppState>| metrics(s, limiter)
            }),
        )
        .route(
            "/openapi.json",
            get(move || {
                let doc = doc.clone();
                async move { Json(doc) }
            }),
        )
        // Inside out: idempotency runs on routed requests only, after authentication.
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            idempotency::layer,
        ))
        // Pages and their assets: anonymous, outside the API's idempotency keys.
        .merge(pages::routes())
        .merge(agents::routes())
        // MCP's requests carry their own ids; only a sandbox's token gets in, and its
        // sessions are bounded.
        .route_service(
            "/mcp",
            tower::ServiceBuilder::new()
                .layer(axum::middleware::from_fn(auth::sandbox_only))
                .layer(axum::middleware::from_fn_with_state(sessions, mcp::guard))
                .service(mcp),
        )
        .layer(axum::middleware::from_fn_with_state(
            (state.clone(), limiter),
            auth::layer,
        ))
        .with_state(state)
}

/// An address of this machine's that reaches `local` (an unspecified address is not one).
pub fn reachable(local: SocketAddr) -> SocketAddr {
    let ip = match local.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, local.port())
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
        .routes(routes!(whoami))
        .routes(routes!(lifecycle::policy, lifecycle::set_policy))
        .routes(routes!(sessions::prepare))
        .routes(routes!(sessions::register))
        .routes(routes!(sessions::open, sessions::list))
        .routes(routes!(sessions::get))
        .routes(routes!(sessions::revoke))
        .routes(routes!(sessions::close))
        .routes(routes!(sessions::heartbeat))
        .routes(routes!(lifecycle::report))
        .routes(routes!(lifecycle::webhook))
        .routes(routes!(sessions::decision_to_sign, sessions::decide))
        .routes(routes!(payments::pay, payments::list))
        .routes(routes!(payments::get))
        .routes(routes!(payments::limits))
        .routes(routes!(payments::host_list))
        .routes(routes!(payments::record_provenance))
        .routes(routes!(payments::get_provenance))
        .routes(routes!(agents::prepare))
        .routes(routes!(agents::register))
        .routes(routes!(agents::get_agent))
        .routes(routes!(payments::rate))
        .routes(routes!(payments::get_feedback))
        .routes(routes!(x402::supported))
        .routes(routes!(x402::verify))
        .routes(routes!(x402::settle))
        .routes(routes!(x402::pay))
        .routes(routes!(x402::offer))
        .routes(routes!(allowlists::create, allowlists::list))
        .routes(routes!(allowlists::get))
        .routes(routes!(allowlists::set_entries))
        .routes(routes!(allowlists::remove_entry))
        .routes(routes!(webhooks::create, webhooks::list))
        .routes(routes!(webhooks::delete))
        .routes(routes!(webhooks::deliveries))
        .routes(routes!(webhooks::replay))
}

/// Whether the relayer can serve.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct Health {
    /// The database and the node answer, and every task runs.
    ok: bool,
    /// The database answers.
    database: bool,
    /// The node's chain id, when it answers.
    chain_id: Option<u64>,
    /// The supervised tasks (the engine, each job) by name: one that ended or panicked waits
    /// to start again (`running: false`).
    #[schema(value_type = BTreeMap<String, TaskHealth>)]
    tasks: BTreeMap<&'static str, TaskHealth>,
}

/// Whether the database and the node answer and every background task runs.
#[utoipa::path(get, path = "/health", operation_id = "health", tag = "service",
    responses((status = 200, description = "All is well", body = Health),
        (status = 503, description = "Something is not (which is said)", body = Health)))]
async fn health(State(s): State<AppState>) -> impl IntoResponse {
    let database = s.store.ping().await.is_ok();
    let chain_id = s.client.chain_id().await.ok();
    let tasks = s.tasks.health();
    let ok = database && chain_id.is_some() && tasks.values().all(|t| t.running);
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let health = Health {
        ok,
        database,
        chain_id,
        tasks,
    };
    (status, Json(health))
}

/// Prometheus metrics (text exposition 0.0.4).
#[utoipa::path(get, path = "/metrics", operation_id = "metrics", tag = "service",
    responses((status = 200, description = "Prometheus text", content_type = "text/plain", body = String)))]
async fn metrics(
    State(s): State<AppState>,
    limiter: Arc<Limiter>,
) -> Result<impl IntoResponse, Error> {
    let text = metrics::render(&s, &limiter).await?;
    Ok((
        [(header::CONTENT_TYPE, crate::engine::metrics::CONTENT_TYPE)],
        text,
    ))
}

/// A host as its key shows it.
#[derive(Serialize, ToSchema)]
struct HostView {
    /// `host_…`.
    id: String,
    /// Its name.
    name: String,
    /// What its key may do: `sessions`, `read`, `webhooks`.
    scopes: Vec<&'static str>,
}

/// The calling key's host and scopes (a way to check a key).
#[utoipa::path(get, path = "/v1/host", operation_id = "getHost", tag = "service",
    security(("hostKey" = [])), responses((status = 200, description = "The host", body = HostView)))]
async fn whoami(host: Host) -> Json<HostView> {
    Json(HostView {
        scopes: host.scopes.iter().map(|s| s.as_str()).collect(),
        id: host.id,
        name: host.name,
    })
}

/// This document.
#[utoipa::path(get, path = "/openapi.json", operation_id = "openapi", tag = "service",
    responses((status = 200, description = "OpenAPI 3.1", body = Object)))]
#[allow(dead_code)] // Documents the route `router` serves with the document it built.
fn openapi_json() {}
