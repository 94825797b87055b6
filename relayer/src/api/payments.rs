//! Sandboxes' payments and provenance (hosts may read their sessions' payments).

use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{json, Value};

use super::extract::{Body, Caller, Sandbox};
use super::idempotency::RequestKey;
use super::state::AppState;
use crate::hosts::Scope;
use crate::kernel::Error;
use crate::payments::{self, PayBody, PaymentView};
use crate::provenance::{self, ProvenanceView, RecordRequest};
use crate::sessions;

/// `POST /v1/payments`: `202` with the payment's id and status.
pub(super) async fn pay(
    State(s): State<AppState>,
    Sandbox(session): Sandbox,
    key: Option<Extension<RequestKey>>,
    Body(req): Body<PayBody>,
) -> Result<(StatusCode, Json<PaymentView>), Error> {
    let key = key.as_ref().map(|k| k.0 .0.as_str());
    Ok((
        StatusCode::ACCEPTED,
        Json(payments::pay(&s, &session, req, key).await?),
    ))
}

/// `?wait=SECONDS` (at most 60): answer once settled (or, for a payment, in one of the
/// comma-separated statuses `until` names), or when the time is up.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct WaitQuery {
    wait: Option<u64>,
    until: Option<String>,
}

impl WaitQuery {
    fn duration(&self) -> Duration {
        Duration::from_secs(self.wait.unwrap_or(0).min(60))
    }
}

/// `GET /v1/payments/{id}`: the sandbox's own, or (read scope) any of the host's sessions'.
pub(super) async fn get(
    State(s): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Query(q): Query<WaitQuery>,
) -> Result<Json<PaymentView>, Error> {
    let session = match caller {
        Caller::Sandbox(session) => *session,
        Caller::Host(host) => {
            host.require(Scope::Read)?;
            let p = s.store.payment(&id, None).await?.ok_or(Error::NotFound)?;
            sessions::host_session(&s.store, &host, &p.session_id).await?
        }
    };
    let until: Option<Vec<&str>> = q.until.as_deref().map(|u| u.split(',').collect());
    Ok(Json(
        payments::get(&s, &session, &id, q.duration(), until.as_deref()).await?,
    ))
}

/// Paging of `GET /v1/payments`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    limit: Option<i64>,
}

/// `GET /v1/payments`: the sandbox's session's payments, newest first.
pub(super) async fn list(
    State(s): State<AppState>,
    Sandbox(session): Sandbox,
    Query(q): Query<ListQuery>,
) -> Result<Json<Value>, Error> {
    let payments = payments::list(&s, &session, q.limit).await?;
    Ok(Json(json!({ "payments": payments })))
}

/// `POST /v1/provenance`: `202` with the record's id and status.
pub(super) async fn record_provenance(
    State(s): State<AppState>,
    Sandbox(session): Sandbox,
    key: Option<Extension<RequestKey>>,
    Body(req): Body<RecordRequest>,
) -> Result<(StatusCode, Json<ProvenanceView>), Error> {
    let key = key.as_ref().map(|k| k.0 .0.as_str());
    Ok((
        StatusCode::ACCEPTED,
        Json(provenance::record(&s, &session, req, key).await?),
    ))
}

/// `GET /v1/provenance/{id}`.
pub(super) async fn get_provenance(
    State(s): State<AppState>,
    Sandbox(session): Sandbox,
    Path(id): Path<String>,
    Query(q): Query<WaitQuery>,
) -> Result<Json<ProvenanceView>, Error> {
    Ok(Json(
        provenance::get(&s, &session, &id, q.duration()).await?,
    ))
}
