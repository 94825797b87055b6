//! Hosts' allowlists (`/v1/allowlists`): made and edited through the relayer's signers.

use alloy_primitives::{Address, U256};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;

use super::extract::Body;
use super::state::AppState;
use crate::allowlists::{self, AllowlistList, AllowlistView, CreateRequest, EntriesRequest};
use crate::hosts::{Host, Scope};
use crate::kernel::Error;

/// A list id from the path.
fn list_id(id: &str) -> Result<U256, Error> {
    id.parse::<u64>()
        .map(U256::from)
        .map_err(|_| Error::NotFound)
}

/// Create an allowlist, owned on chain by one of the relayer's signers for the host, with its
/// first counterparties and admins (scope: sessions); answered once mined.
#[utoipa::path(post, path = "/v1/allowlists", operation_id = "createAllowlist",
    tag = "allowlists", request_body = CreateRequest, security(("hostKey" = [])),
    responses((status = 201, description = "Created", body = AllowlistView)))]
pub(super) async fn create(
    State(s): State<AppState>,
    host: Host,
    Body(req): Body<CreateRequest>,
) -> Result<(StatusCode, Json<AllowlistView>), Error> {
    host.require(Scope::Sessions)?;
    Ok((
        StatusCode::CREATED,
        Json(allowlists::create(&s, &host, req).await?),
    ))
}

/// The host's allowlists (scope: read).
#[utoipa::path(get, path = "/v1/allowlists", operation_id = "listAllowlists",
    tag = "allowlists", security(("hostKey" = [])),
    responses((status = 200, description = "Its lists", body = AllowlistList)))]
pub(super) async fn list(
    State(s): State<AppState>,
    host: Host,
) -> Result<Json<AllowlistList>, Error> {
    host.require(Scope::Read)?;
    Ok(Json(allowlists::list(&s, &host).await?))
}

/// One of the host's allowlists as it is on chain now (scope: read).
#[utoipa::path(get, path = "/v1/allowlists/{id}", operation_id = "getAllowlist",
    tag = "allowlists", params(("id" = String, Path, description = "The list's id.")),
    security(("hostKey" = [])),
    responses((status = 200, description = "The list", body = AllowlistView)))]
pub(super) async fn get(
    State(s): State<AppState>,
    host: Host,
    Path(id): Path<String>,
) -> Result<Json<AllowlistView>, Error> {
    host.require(Scope::Read)?;
    Ok(Json(allowlists::get(&s, &host, list_id(&id)?).await?))
}

/// Set counterparties of one of the host's allowlists (scope: sessions); answered once mined.
/// A change holds at once for every session with the list live.
#[utoipa::path(put, path = "/v1/allowlists/{id}/entries", operation_id = "setAllowlistEntries",
    tag = "allowlists", params(("id" = String, Path, description = "The list's id.")),
    request_body = EntriesRequest, security(("hostKey" = [])),
    responses((status = 200, description = "The list", body = AllowlistView)))]
pub(super) async fn set_entries(
    State(s): State<AppState>,
    host: Host,
    Path(id): Path<String>,
    Body(req): Body<EntriesRequest>,
) -> Result<Json<AllowlistView>, Error> {
    host.require(Scope::Sessions)?;
    let list = list_id(&id)?;
    Ok(Json(
        allowlists::edit(&s, &host, list, &req.entries, &[]).await?,
    ))
}

/// Remove a counterparty from one of the host's allowlists (scope: sessions): payments to it
/// are refused at once, by every session of the list; answered once mined.
#[utoipa::path(delete, path = "/v1/allowlists/{id}/entries/{address}",
    operation_id = "removeAllowlistEntry", tag = "allowlists",
    params(("id" = String, Path, description = "The list's id."),
        ("address" = String, Path, description = "The counterparty.")),
    security(("hostKey" = [])),
    responses((status = 200, description = "The list", body = AllowlistView)))]
pub(super) async fn remove_entry(
    State(s): State<AppState>,
    host: Host,
    Path((id, address)): Path<(String, String)>,
) -> Result<Json<AllowlistView>, Error> {
    host.require(Scope::Sessions)?;
    let counterparty: Address = address
        .parse()
        .map_err(|_| Error::invalid("address", "not an address"))?;
    Ok(Json(
        allowlists::remove(&s, &host, list_id(&id)?, counterparty).await?,
    ))
}
