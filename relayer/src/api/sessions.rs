//! Hosts' session routes, and heartbeats (hosts or sandboxes).

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::extract::{Body, Caller};
use super::state::AppState;
use crate::hosts::{Host, Scope};
use crate::kernel::Error;
use crate::payments::{self, DecisionRequest, DecisionToSign};
use crate::sessions::{
    self, Heartbeat, OpenRequest, Opened, PrepareRequest, Prepared, RegisterRequest, Revoked,
    SessionView,
};

type Created<T> = (StatusCode, Json<T>);

/// `POST /v1/sessions/prepare`.
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

/// `POST /v1/sessions`.
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

/// `POST /v1/sessions/register`.
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
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct ListQuery {
    provider: Option<String>,
    sandbox_id: Option<String>,
    before: Option<i64>,
    limit: Option<i64>,
}

/// `GET /v1/sessions`.
pub(super) async fn list(
    State(s): State<AppState>,
    host: Host,
    Query(q): Query<ListQuery>,
) -> Result<Json<Value>, Error> {
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
    Ok(Json(json!({ "sessions": sessions })))
}

/// `GET /v1/sessions/{id}`.
pub(super) async fn get(
    State(s): State<AppState>,
    host: Host,
    Path(id): Path<String>,
) -> Result<Json<SessionView>, Error> {
    host.require(Scope::Read)?;
    Ok(Json(sessions::get(&s, &host, &id).await?))
}

/// `POST /v1/sessions/{id}/revoke`.
pub(super) async fn revoke(
    State(s): State<AppState>,
    host: Host,
    Path(id): Path<String>,
) -> Result<Json<Revoked>, Error> {
    host.require(Scope::Sessions)?;
    Ok(Json(sessions::revoke(&s, &host, &id).await?))
}

/// `POST /v1/sessions/{id}/close`.
pub(super) async fn close(
    State(s): State<AppState>,
    host: Host,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Value>), Error> {
    host.require(Scope::Sessions)?;
    Ok((
        StatusCode::ACCEPTED,
        Json(sessions::close(&s, &host, &id).await?),
    ))
}

/// `POST /v1/sessions/{id}/heartbeat`: the sandbox (its own session only) or its host.
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
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DecisionQuery {
    approve: bool,
}

/// `GET /v1/sessions/{id}/pending/{pending_id}/decision?approve=…`: the typed data the owner
/// signs.
pub(super) async fn decision_to_sign(
    State(s): State<AppState>,
    host: Host,
    Path((id, pending_id)): Path<(String, String)>,
    Query(q): Query<DecisionQuery>,
) -> Result<Json<DecisionToSign>, Error> {
    host.require(Scope::Sessions)?;
    let session = sessions::host_session(&s.store, &host, &id).await?;
    Ok(Json(
        payments::decision_to_sign(&s, &session, &pending_id, q.approve).await?,
    ))
}

/// `POST /v1/sessions/{id}/pending/{pending_id}/decision`: the owner's signed decision.
pub(super) async fn decide(
    State(s): State<AppState>,
    host: Host,
    Path((id, pending_id)): Path<(String, String)>,
    Body(req): Body<DecisionRequest>,
) -> Result<(StatusCode, Json<Value>), Error> {
    host.require(Scope::Sessions)?;
    let session = sessions::host_session(&s.store, &host, &id).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(payments::decide(&s, &session, &pending_id, req).await?),
    ))
}
