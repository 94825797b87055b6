//! Hosts' outbound webhook endpoints and their deliveries.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::extract::Body;
use super::state::AppState;
use crate::hosts::{Host, Scope};
use crate::kernel::Error;
use crate::webhooks::{self, CreateRequest, EndpointView};

/// `POST /v1/webhooks`: `201` with the endpoint and its secret (shown this once).
pub(super) async fn create(
    State(s): State<AppState>,
    host: Host,
    Body(req): Body<CreateRequest>,
) -> Result<(StatusCode, Json<EndpointView>), Error> {
    host.require(Scope::Webhooks)?;
    Ok((
        StatusCode::CREATED,
        Json(webhooks::create(&s, &host, req).await?),
    ))
}

/// `GET /v1/webhooks`.
pub(super) async fn list(State(s): State<AppState>, host: Host) -> Result<Json<Value>, Error> {
    host.require(Scope::Webhooks)?;
    Ok(Json(
        json!({ "webhooks": webhooks::list(&s, &host).await? }),
    ))
}

/// `DELETE /v1/webhooks/{id}`.
pub(super) async fn delete(
    State(s): State<AppState>,
    host: Host,
    Path(id): Path<String>,
) -> Result<StatusCode, Error> {
    host.require(Scope::Webhooks)?;
    webhooks::delete(&s, &host, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `?status=pending|delivered|dead`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DeliveriesQuery {
    status: Option<String>,
}

/// `GET /v1/webhooks/{id}/deliveries`.
pub(super) async fn deliveries(
    State(s): State<AppState>,
    host: Host,
    Path(id): Path<String>,
    Query(q): Query<DeliveriesQuery>,
) -> Result<Json<Value>, Error> {
    host.require(Scope::Webhooks)?;
    let list = webhooks::deliveries(&s, &host, &id, q.status.as_deref()).await?;
    Ok(Json(json!({ "deliveries": list })))
}

/// `POST /v1/webhooks/{id}/deliveries/{message_id}/replay`.
pub(super) async fn replay(
    State(s): State<AppState>,
    host: Host,
    Path((id, message_id)): Path<(String, String)>,
) -> Result<StatusCode, Error> {
    host.require(Scope::Webhooks)?;
    webhooks::replay(&s, &host, &id, &message_id).await?;
    Ok(StatusCode::ACCEPTED)
}
