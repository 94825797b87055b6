//! Sandboxes' payments and provenance (hosts may read their sessions' payments).

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::extract::{Body, Caller, Params, Sandbox};
use super::idempotency::RequestKey;
use super::state::AppState;
use crate::feedback::{self, FeedbackView, RateRequest};
use crate::hosts::Scope;
use crate::kernel::Error;
use crate::limits::{self, Limits};
use crate::payments::{self, PayBody, PaymentView};
use crate::provenance::{self, ProvenanceView, RecordRequest};
use crate::sessions;
use crate::store::PaymentStatus;

/// Pay from the session: checked by the contracts' rules now, then durably queued. A body
/// with a `signature` is a `PaymentIntent` the sandbox's own session key signed.
#[utoipa::path(post, path = "/v1/payments", operation_id = "pay", tag = "payments",
    request_body = PayBody, security(("capabilityToken" = [])),
    responses((status = 202, description = "Accepted and durably queued", body = PaymentView)))]
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

/// What the session may still spend, and under which rules: remaining deposit, this period's
/// budget and when it refills, caps, co-sign threshold, the counterparties it may pay, expiry
/// and lease; amounts in base units and in the token's units.
#[utoipa::path(get, path = "/v1/limits", operation_id = "limits", tag = "payments",
    security(("capabilityToken" = [])),
    responses((status = 200, description = "The limits now", body = Limits)))]
pub(super) async fn limits(
    State(s): State<AppState>,
    Sandbox(session): Sandbox,
) -> Result<Json<Limits>, Error> {
    Ok(Json(limits::limits(&s, &session).await?))
}

/// `?wait=SECONDS` (at most 60): answer once settled, or when the time is up.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct WaitQuery {
    /// Seconds to wait for a settled status before answering (more than 60 waits 60).
    #[param(maximum = 60)]
    pub(super) wait: Option<u64>,
}

/// A payment's `?wait=SECONDS&until=STATUSES`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct PaymentQuery {
    /// Seconds to wait for one of the `until` statuses before answering (more than 60 waits
    /// 60).
    #[param(maximum = 60)]
    wait: Option<u64>,
    /// With `wait`, the statuses to wait for, comma-separated (default: `confirmed`,
    /// `pending_approval`, `rejected`, `failed`, `expired`); a final status (`confirmed`,
    /// `rejected`, `failed`, `expired`) ends the wait too.
    until: Option<String>,
}

pub(super) fn duration(wait: Option<u64>) -> Duration {
    Duration::from_secs(wait.unwrap_or(0).min(60))
}

impl PaymentQuery {
    /// The statuses `until` names.
    fn until(&self) -> Result<Option<Vec<PaymentStatus>>, Error> {
        let Some(names) = &self.until else {
            return Ok(None);
        };
        let status = |name: &str| {
            PaymentStatus::from_name(name).ok_or_else(|| {
                Error::invalid("until", format!("{name:?} is not a payment's status"))
            })
        };
        names
            .split(',')
            .map(status)
            .collect::<Result<_, _>>()
            .map(Some)
    }
}

/// A payment and its status: the sandbox's own, or (scope read) any of the host's sessions'.
#[utoipa::path(get, path = "/v1/payments/{id}", operation_id = "getPayment", tag = "payments",
    params(("id" = String, Path, description = "`pay_…`."), PaymentQuery),
    security(("capabilityToken" = []), ("hostKey" = [])),
    responses((status = 200, description = "The payment", body = PaymentView)))]
pub(super) async fn get(
    State(s): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Params(q): Params<PaymentQuery>,
) -> Result<Json<PaymentView>, Error> {
    let session = match caller {
        Caller::Sandbox(session) => *session,
        Caller::Host(host) => {
            host.require(Scope::Read)?;
            let p = s.store.payment(&id, None).await?.ok_or(Error::NotFound)?;
            sessions::host_session(&s.store, &host, &p.session_id).await?
        }
    };
    let until = q.until()?;
    Ok(Json(
        payments::get(&s, &session, &id, duration(q.wait), until.as_deref()).await?,
    ))
}

/// Paging of `GET /v1/payments`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ListQuery {
    /// 1 to 1000 (default 100).
    limit: Option<i64>,
}

/// A page of payments.
#[derive(Serialize, ToSchema)]
pub(super) struct PaymentList {
    /// Newest first.
    payments: Vec<PaymentView>,
}

/// The session's payments, newest first.
#[utoipa::path(get, path = "/v1/payments", operation_id = "listPayments", tag = "payments",
    params(ListQuery), security(("capabilityToken" = [])),
    responses((status = 200, description = "Payments", body = PaymentList)))]
pub(super) async fn list(
    State(s): State<AppState>,
    Sandbox(session): Sandbox,
    Params(q): Params<ListQuery>,
) -> Result<Json<PaymentList>, Error> {
    let payments = payments::list(&s, &session, q.limit).await?;
    Ok(Json(PaymentList { payments }))
}

/// Filters of `GET /v1/host/payments`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct HostListQuery {
    /// Only payments in this status.
    status: Option<PaymentStatus>,
    /// 1 to 1000 (default 100): the newest payments looked at.
    limit: Option<i64>,
}

/// The payments of all the host's sessions, newest first (scope: read).
#[utoipa::path(get, path = "/v1/host/payments", operation_id = "listHostPayments",
    tag = "payments", params(HostListQuery), security(("hostKey" = [])),
    responses((status = 200, description = "Payments", body = PaymentList)))]
pub(super) async fn host_list(
    State(s): State<AppState>,
    host: crate::hosts::Host,
    Params(q): Params<HostListQuery>,
) -> Result<Json<PaymentList>, Error> {
    host.require(Scope::Read)?;
    let payments = payments::host_list(&s, &host, q.status, q.limit).await?;
    Ok(Json(PaymentList { payments }))
}

/// Record provenance, signed by the session key.
#[utoipa::path(post, path = "/v1/provenance", operation_id = "recordProvenance",
    tag = "provenance", request_body = RecordRequest, security(("capabilityToken" = [])),
    responses((status = 202, description = "Accepted and queued", body = ProvenanceView)))]
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

/// A provenance record and its status.
#[utoipa::path(get, path = "/v1/provenance/{id}", operation_id = "getProvenance",
    tag = "provenance", params(("id" = String, Path, description = "`prov_…`."), WaitQuery),
    security(("capabilityToken" = [])),
    responses((status = 200, description = "The record", body = ProvenanceView)))]
pub(super) async fn get_provenance(
    State(s): State<AppState>,
    Sandbox(session): Sandbox,
    Path(id): Path<String>,
    Params(q): Params<WaitQuery>,
) -> Result<Json<ProvenanceView>, Error> {
    Ok(Json(
        provenance::get(&s, &session, &id, duration(q.wait)).await?,
    ))
}

/// Rate the agent a payment of this session paid: ERC-8004 feedback that Bursar's
/// ReceiptRegistry gives for the payment's receipt, signed by the session key (it counts in
/// `getSummary(agent, [ReceiptRegistry])`). Refused at once with the registry's error: the
/// payment went to another agent (`FeedbackNotTheAgent`), its receipt was rated before
/// (`FeedbackAlreadyGiven`), the session's owner owns the agent (`FeedbackSelfDealing`).
#[utoipa::path(post, path = "/v1/feedback", operation_id = "rateCounterparty",
    tag = "reputation", request_body = RateRequest, security(("capabilityToken" = [])),
    responses((status = 202, description = "Accepted and queued", body = FeedbackView)))]
pub(super) async fn rate(
    State(s): State<AppState>,
    Sandbox(session): Sandbox,
    key: Option<Extension<RequestKey>>,
    Body(req): Body<RateRequest>,
) -> Result<(StatusCode, Json<FeedbackView>), Error> {
    let key = key.as_ref().map(|k| k.0 .0.as_str());
    Ok((
        StatusCode::ACCEPTED,
        Json(feedback::rate(&s, &session, req, key).await?),
    ))
}

/// A feedback and its status.
#[utoipa::path(get, path = "/v1/feedback/{id}", operation_id = "getFeedback",
    tag = "reputation", params(("id" = String, Path, description = "`fb_…`."), WaitQuery),
    security(("capabilityToken" = [])),
    responses((status = 200, description = "The feedback", body = FeedbackView)))]
pub(super) async fn get_feedback(
    State(s): State<AppState>,
    Sandbox(session): Sandbox,
    Path(id): Path<String>,
    Params(q): Params<WaitQuery>,
) -> Result<Json<FeedbackView>, Error> {
    Ok(Json(
        feedback::get(&s, &session, &id, duration(q.wait)).await?,
    ))
}
