//! Sandboxes' lifecycles: providers' webhooks and hosts' own reports.

use axum::extract::{Path, Request, State};
use axum::Json;

use super::error::ErrorBody;
use super::extract::Body;
use super::state::AppState;
use crate::hosts::{Host, Scope};
use crate::kernel::policy::{self, Policy};
use crate::kernel::Error;
use crate::lifecycle::{self, LifecycleRequest, Received};
use crate::providers::{self, Provider, ProviderError};
use crate::sessions;

/// A sandbox provider's signed lifecycle webhook, verified on the raw body (at most
/// [`providers::MAX_BODY`] bytes) with the host's secret for it before it is parsed.
#[utoipa::path(post, path = "/v1/hosts/{host_id}/providers/{provider}/webhook",
    operation_id = "providerWebhook", tag = "lifecycle",
    params(("host_id" = String, Path, description = "The host's id."),
        ("provider" = Provider, Path, description = "The provider.")),
    request_body(content = Object, description = "The provider's own payload (at most 64 KiB)."),
    responses(
        (status = 200, description = "Verified, recorded and acted on (or a duplicate, or an event not about a sandbox)", body = Received),
        (status = 400, description = "Signed but not the provider's format (`malformed_payload`)", body = ErrorBody),
        (status = 401, description = "`bad_signature`, `stale_delivery`, `missing_signature_header` or `provider_not_configured`: nothing changed", body = ErrorBody),
        (status = 404, description = "Not a provider with webhooks", body = ErrorBody),
        (status = 413, description = "Body over 64 KiB (`body_too_large`)", body = ErrorBody)))]
pub(super) async fn webhook(
    State(s): State<AppState>,
    Path((host_id, provider)): Path<(String, String)>,
    req: Request,
) -> Result<Json<Received>, Error> {
    let provider: Provider = provider.parse().map_err(|_| Error::NotFound)?;
    let (parts, body) = req.into_parts();
    let body = axum::body::to_bytes(body, providers::MAX_BODY)
        .await
        .map_err(|_| {
            s.process
                .deliveries
                .count(provider.name(), ProviderError::TooLarge.code());
            Error::from(ProviderError::TooLarge)
        })?;
    Ok(Json(
        lifecycle::deliver(&s, &host_id, provider, &parts.headers, &body).await?,
    ))
}

/// The host reports its sandbox's state, for providers without a bridge (Modal, a self-run
/// sandbox) (scope: sessions).
#[utoipa::path(post, path = "/v1/sessions/{id}/lifecycle", operation_id = "reportLifecycle",
    tag = "lifecycle", request_body = LifecycleRequest,
    params(("id" = String, Path, description = "The session id.")), security(("hostKey" = [])),
    responses((status = 200, description = "Recorded and acted on", body = Received)))]
pub(super) async fn report(
    State(s): State<AppState>,
    host: Host,
    Path(id): Path<String>,
    Body(req): Body<LifecycleRequest>,
) -> Result<Json<Received>, Error> {
    host.require(Scope::Sessions)?;
    let row = sessions::host_session(&s.store, &host, &id).await?;
    Ok(Json(lifecycle::report(&s, &row, req).await?))
}

/// The host's lifecycle policy and metering rates (scope: read).
#[utoipa::path(get, path = "/v1/host/policy", operation_id = "getPolicy", tag = "lifecycle",
    security(("hostKey" = [])), responses((status = 200, description = "The policy", body = Policy)))]
pub(super) async fn policy(State(s): State<AppState>, host: Host) -> Result<Json<Policy>, Error> {
    host.require(Scope::Read)?;
    Ok(Json(policy::load(&s, &host.id).await?))
}

/// Set the host's policy, for events received from now on (scope: sessions).
#[utoipa::path(put, path = "/v1/host/policy", operation_id = "setPolicy", tag = "lifecycle",
    request_body = Policy, security(("hostKey" = [])),
    responses((status = 200, description = "Set", body = Policy)))]
pub(super) async fn set_policy(
    State(s): State<AppState>,
    host: Host,
    Body(policy): Body<Policy>,
) -> Result<Json<Policy>, Error> {
    host.require(Scope::Sessions)?;
    Ok(Json(policy::set(&s, &host.id, policy).await?))
}
