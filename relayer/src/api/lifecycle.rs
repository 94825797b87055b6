//! Sandboxes' lifecycles: providers' webhooks and hosts' own reports.

use axum::extract::{Path, Request, State};
use axum::Json;

use super::extract::Body;
use super::state::AppState;
use crate::hosts::{Host, Scope};
use crate::kernel::policy::{self, Policy};
use crate::kernel::providers::{self, Provider, ProviderError};
use crate::kernel::Error;
use crate::lifecycle::{self, LifecycleRequest, Received};
use crate::sessions;

/// `POST /v1/hosts/{host_id}/providers/{provider}/webhook`: a provider's signed delivery,
/// read raw (at most [`providers::MAX_BODY`] bytes) and verified before it is parsed.
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
            s.deliveries
                .count(provider.name(), ProviderError::TooLarge.code());
            Error::Delivery(ProviderError::TooLarge)
        })?;
    Ok(Json(
        lifecycle::deliver(&s, &host_id, provider, &parts.headers, &body).await?,
    ))
}

/// `POST /v1/sessions/{id}/lifecycle`: the host reports its sandbox's state.
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

/// `GET /v1/host/policy`: the host's lifecycle policy.
pub(super) async fn policy(State(s): State<AppState>, host: Host) -> Result<Json<Policy>, Error> {
    host.require(Scope::Read)?;
    Ok(Json(policy::load(&s, &host.id).await?))
}

/// `PUT /v1/host/policy`: sets it.
pub(super) async fn set_policy(
    State(s): State<AppState>,
    host: Host,
    Body(policy): Body<Policy>,
) -> Result<Json<Policy>, Error> {
    host.require(Scope::Sessions)?;
    Ok(Json(policy::set(&s, &host.id, policy).await?))
}
