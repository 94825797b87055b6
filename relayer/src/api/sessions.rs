//! Hosts' session routes, and heartbeats (hosts or sandboxes).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::extract::{Body, Caller, Params};
use super::state::AppState;
use crate::hosts::{Host, Scope};
use crate::kernel::Error;
use crate::payments::{self, Decided, DecisionRequest, DecisionToSign};
use crate::sessions::{
    self, Closing, Heartbeat, OpenRequest, Opened, PrepareRequest, Prepared, RegisterRequest,
    Revoked, SessionView,
};

type Created<T> = (StatusCode, Json<T>);

/// Prepare a session: a custodial key, and the typed data the owner signs (scope: sessions).
#[utoipa::path(post, path = "/v1/sessions/prepare", operation_id = "prepareSession", tag = "sessions",
    request_body = PrepareRequest, security(("hostKey" = [])),
    responses((status = 201, description = "Prepared", body = Prepared)))]
pub(super) async fn prepare(
    State(s): State<AppState>,
    host: Host,
    Body(req): Body<PrepareRequest>,
) -> Result<Created<Prepared>, Error> {
    host.require(Scope::Sessions)?;
    Ok((
        StatusCode::CREATED,
        Json(sessions::prepare(&s, &host, req).await?),
    ))
}

/// Open a prepared session through the gateway with the owner's signatures (scope: sessions).
#[utoipa::path(post, path = "/v1/sessions", operation_id = "openSession", tag = "sessions",
    request_body = OpenRequest, security(("hostKey" = [])),
    responses((status = 201, description = "Opened (or still opening)", body = Opened)))]
pub(super) async fn open(
    State(s): State<AppState>,
    host: Host,
    Body(req): Body<OpenRequest>,
) -> Result<Created<Opened>, Error> {
    host.require(Scope::Sessions)?;
    Ok((
        StatusCode::CREATED,
        Json(sessions::open(&s, &host, req).await?),
    ))
}

/// Register a prepared session the owner opened with their own wallet, with exactly the
/// prepared terms (scope: sessions).
#[utoipa::path(post, path = "/v1/sessions/register", operation_id = "registerSession",
    tag = "sessions", request_body = RegisterRequest, security(("hostKey" = [])),
    responses((status = 201, description = "Registered", body = Opened)))]
pub(super) async fn register(
    State(s): State<AppState>,
    host: Host,
    Body(req): Body<RegisterRequest>,
) -> Result<Created<Opened>, Error> {
    host.require(Scope::Sessions)?;
    Ok((
        StatusCode::CREATED,
        Json(sessions::register(&s, &host, req).await?),
    ))
}

/// Filters of `GET /v1/sessions`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ListQuery {
    /// Only sessions prepared for this provider.
    provider: Option<String>,
    /// Only sessions prepared for this sandbox.
    sandbox_id: Option<String>,
    /// `createdAt` of the last session seen (paging).
    before: Option<i64>,
    /// 1 to 1000 (default 100).
    limit: Option<i64>,
}

/// A page of sessions.
#[derive(Serialize, ToSchema)]
pub(super) struct SessionList {
    /// Newest first.
    sessions: Vec<SessionView>,
}

/// The host's sessions, newest first (scope: read).
#[utoipa::path(get, path = "/v1/sessions", operation_id = "listSessions", tag = "sessions",
    params(ListQuery), security(("hostKey" = [])),
    responses((status = 200, description = "Sessions", body = SessionList)))]
pub(super) async fn list(
    State(s): State<AppState>,
    host: Host,
    Params(q): Params<ListQuery>,
) -> Result<Json<SessionList>, Error> {
    host.require(Scope::Read)?;
    let sessions = sessions::list(
        &s,
        &host,
        q.provider.as_deref(),
        q.sandbox_id.as_deref(),
        q.before,
        q.limit,
    )
    .await?;
    Ok(Json(SessionList { sessions }))
}

/// A session with its on-chain state, lifecycle and metering (scope: read).
#[utoipa::path(get, path = "/v1/sessions/{id}", operation_id = "getSession", tag = "sessions",
    params(("id" = String, Path, description = "The session id (0x and 64 hex digits, or decimal).")), security(("hostKey" = [])),
    responses((status = 200, description = "The session", body = SessionView)))]
pub(super) async fn get(
    State(s): State<AppState>,
    host: Host,
    Path(id): Path<String>,
) -> Result<Json<SessionView>, Error> {
    host.require(Scope::Read)?;
    Ok(Json(sessions::get(&s, &host, &id).await?))
}

/// Revoke: the capability token at once, on chain when the relayer is guardian (scope:
/// sessions).
#[utoipa::path(post, path = "/v1/sessions/{id}/revoke", operation_id = "revokeSession",
    tag = "sessions", params(("id" = String, Path, description = "The session id (0x and 64 hex digits, or decimal).")), security(("hostKey" = [])),
    responses((status = 200, description = "Revoked", body = Revoked)))]
pub(super) async fn revoke(
    State(s): State<AppState>,
    host: Host,
    Path(id): Path<String>,
) -> Result<Json<Revoked>, Error> {
    host.require(Scope::Sessions)?;
    Ok(Json(sessions::revoke(&s, &host, &id).await?))
}

/// Close on chain, refunding the owner (scope: sessions).
#[utoipa::path(post, path = "/v1/sessions/{id}/close", operation_id = "closeSession",
    tag = "sessions", params(("id" = String, Path, description = "The session id (0x and 64 hex digits, or decimal).")), security(("hostKey" = [])),
    responses((status = 202, description = "Closing (or closed)", body = Closing)))]
pub(super) async fn close(
    State(s): State<AppState>,
    host: Host,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Closing>), Error> {
    host.require(Scope::Sessions)?;
    Ok((
        StatusCode::ACCEPTED,
        Json(sessions::close(&s, &host, &id).await?),
    ))
}

/// The sandbox is alive: the lease is renewed once half of it is gone (the sandbox, for its
/// own session, or its host with scope sessions).
#[utoipa::path(post, path = "/v1/sessions/{id}/heartbeat", operation_id = "heartbeat",
    tag = "sessions", params(("id" = String, Path, description = "The session id (0x and 64 hex digits, or decimal).")), security(("capabilityToken" = []), ("hostKey" = [])),
    responses((status = 200, description = "Recorded", body = Heartbeat)))]
pub(super) async fn heartbeat(
    State(s): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Heartbeat>, Error> {
    let row = match caller {
        Caller::Host(host) => {
            host.require(Scope::Sessions)?;
            sessions::host_session(&s.store, &host, &id).await?
        }
        Caller::Sandbox(row) => {
            if crate::kernel::json::parse_session_id(&id).map(crate::kernel::json::session_id_text)
                != Some(row.id.clone())
            {
                return Err(Error::NotFound);
            }
            *row
        }
    };
    Ok(Json(sessions::heartbeat(&s, &row).await?))
}

/// `?approve=true|false` of the decision's typed data.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct DecisionQuery {
    /// Approve (true) or reject (false).
    pub(super) approve: bool,
}

/// The typed data the owner signs to decide a pending payment (scope: sessions).
#[utoipa::path(get, path = "/v1/sessions/{id}/pending/{pending_id}/decision",
    operation_id = "getDecisionToSign", tag = "sessions",
    params(("id" = String, Path, description = "The session id (0x and 64 hex digits, or decimal)."), ("pending_id" = String, Path, description = "The wallet's pending id (decimal)."), DecisionQuery), security(("hostKey" = [])),
    responses((status = 200, description = "To sign", body = DecisionToSign)))]
pub(super) async fn decision_to_sign(
    State(s): State<AppState>,
    host: Host,
    Path((id, pending_id)): Path<(String, String)>,
    Params(q): Params<DecisionQuery>,
) -> Result<Json<DecisionToSign>, Error> {
    host.require(Scope::Sessions)?;
    let session = sessions::host_session(&s.store, &host, &id).await?;
    Ok(Json(
        payments::decision_to_sign(&s, &session, &pending_id, q.approve).await?,
    ))
}

/// Send the owner's signed decision through the gateway (scope: sessions).
#[utoipa::path(post, path = "/v1/sessions/{id}/pending/{pending_id}/decision",
    operation_id = "decidePending", tag = "sessions", request_body = DecisionRequest,
    params(("id" = String, Path, description = "The session id (0x and 64 hex digits, or decimal)."), ("pending_id" = String, Path, description = "The wallet's pending id (decimal).")), security(("hostKey" = [])),
    responses((status = 202, description = "Decision queued", body = Decided)))]
pub(super) async fn decide(
    State(s): State<AppState>,
    host: Host,
    Path((id, pending_id)): Path<(String, String)>,
    Body(req): Body<DecisionRequest>,
) -> Result<(StatusCode, Json<Decided>), Error> {
    host.require(Scope::Sessions)?;
    let session = sessions::host_session(&s.store, &host, &id).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(payments::decide(&s, &session, &pending_id, req).await?),
    ))
}
