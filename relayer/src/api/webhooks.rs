//! Hosts' outbound webhook endpoints and their deliveries.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::extract::{Body, Params};
use super::state::AppState;
use crate::hosts::{Host, Scope};
use crate::kernel::Error;
use crate::webhooks::{self, CreateRequest, DeliveryView, EndpointView};

/// Add an outbound webhook endpoint; its URL must reach public addresses (scope: webhooks).
#[utoipa::path(post, path = "/v1/webhooks", operation_id = "createWebhook", tag = "webhooks",
    request_body = CreateRequest, security(("hostKey" = [])),
    responses((status = 201, description = "Added; the secret is shown this once", body = EndpointView)))]
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

/// A host's webhook endpoints.
#[derive(Serialize, ToSchema)]
pub(super) struct WebhookList {
    /// Oldest first.
    webhooks: Vec<EndpointView>,
}

/// The host's webhook endpoints (scope: webhooks).
#[utoipa::path(get, path = "/v1/webhooks", operation_id = "listWebhooks", tag = "webhooks",
    security(("hostKey" = [])),
    responses((status = 200, description = "Endpoints", body = WebhookList)))]
pub(super) async fn list(
    State(s): State<AppState>,
    host: Host,
) -> Result<Json<WebhookList>, Error> {
    host.require(Scope::Webhooks)?;
    let webhooks = webhooks::list(&s, &host).await?;
    Ok(Json(WebhookList { webhooks }))
}

/// Delete an endpoint (scope: webhooks).
#[utoipa::path(delete, path = "/v1/webhooks/{id}", operation_id = "deleteWebhook",
    tag = "webhooks", params(("id" = String, Path, description = "`wh_…`.")), security(("hostKey" = [])),
    responses((status = 204, description = "Deleted")))]
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
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct DeliveriesQuery {
    /// Only deliveries in this status: `pending`, `delivered` or `dead`.
    status: Option<String>,
}

/// An endpoint's deliveries.
#[derive(Serialize, ToSchema)]
pub(super) struct DeliveryList {
    /// Newest first.
    deliveries: Vec<DeliveryView>,
}

/// An endpoint's deliveries, newest first (scope: webhooks).
#[utoipa::path(get, path = "/v1/webhooks/{id}/deliveries", operation_id = "listDeliveries",
    tag = "webhooks", params(("id" = String, Path, description = "`wh_…`."), DeliveriesQuery), security(("hostKey" = [])),
    responses((status = 200, description = "Deliveries", body = DeliveryList)))]
pub(super) async fn deliveries(
    State(s): State<AppState>,
    host: Host,
    Path(id): Path<String>,
    Params(q): Params<DeliveriesQuery>,
) -> Result<Json<DeliveryList>, Error> {
    host.require(Scope::Webhooks)?;
    let deliveries = webhooks::deliveries(&s, &host, &id, q.status.as_deref()).await?;
    Ok(Json(DeliveryList { deliveries }))
}

/// Deliver a message again (scope: webhooks).
#[utoipa::path(post, path = "/v1/webhooks/{id}/deliveries/{message_id}/replay",
    operation_id = "replayDelivery", tag = "webhooks",
    params(("id" = String, Path, description = "`wh_…`."), ("message_id" = String, Path, description = "The delivery's `webhook-id`.")),
    security(("hostKey" = [])), responses((status = 202, description = "Queued")))]
pub(super) async fn replay(
    State(s): State<AppState>,
    host: Host,
    Path((id, message_id)): Path<(String, String)>,
) -> Result<StatusCode, Error> {
    host.require(Scope::Webhooks)?;
    webhooks::replay(&s, &host, &id, &message_id).await?;
    Ok(StatusCode::ACCEPTED)
}
