//! ERC-8004 agents the relayer registers for owners (`/v1/agents`), and their registration
//! files (`/agents/{ref}/registration.json`, anyone's to read).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::Value;

use super::extract::{Body, Params};
use super::payments::{duration, WaitQuery};
use super::state::AppState;
use crate::agents::{self, AgentView, PrepareAgentRequest, RegisterAgentRequest};
use crate::hosts::{Host, Scope};
use crate::kernel::Error;

/// Prepare an ERC-8004 agent for an owner (scope: sessions): its registration file (served by
/// the relayer) and the `RegisterAgent` typed data the owner signs in their own wallet.
#[utoipa::path(post, path = "/v1/agents/prepare", operation_id = "prepareAgent",
    tag = "agents", request_body = PrepareAgentRequest, security(("hostKey" = [])),
    responses((status = 201, description = "Prepared", body = AgentView)))]
pub(super) async fn prepare(
    State(s): State<AppState>,
    host: Host,
    Body(req): Body<PrepareAgentRequest>,
) -> Result<(StatusCode, Json<AgentView>), Error> {
    host.require(Scope::Sessions)?;
    Ok((
        StatusCode::CREATED,
        Json(agents::prepare(&s, &host, req).await?),
    ))
}

/// Register a prepared agent with its owner's signature (scope: sessions): a relayer signer
/// registers it and hands it to the owner, who pays no gas. Answers at once; `GET` it for its
/// `agentId` and `registered`.
#[utoipa::path(post, path = "/v1/agents", operation_id = "registerAgent",
    tag = "agents", request_body = RegisterAgentRequest, security(("hostKey" = [])),
    responses((status = 202, description = "Registering", body = AgentView)))]
pub(super) async fn register(
    State(s): State<AppState>,
    host: Host,
    Body(req): Body<RegisterAgentRequest>,
) -> Result<(StatusCode, Json<AgentView>), Error> {
    host.require(Scope::Sessions)?;
    Ok((
        StatusCode::ACCEPTED,
        Json(agents::register(&s, &host, req).await?),
    ))
}

/// An agent the host prepared (scope: read); with `wait`, once the owner holds it or it
/// failed.
#[utoipa::path(get, path = "/v1/agents/{agentRef}", operation_id = "getAgent",
    tag = "agents", params(("agentRef" = String, Path, description = "`agt_…`."), WaitQuery),
    security(("hostKey" = [])),
    responses((status = 200, description = "The agent", body = AgentView)))]
pub(super) async fn get_agent(
    State(s): State<AppState>,
    host: Host,
    Path(agent_ref): Path<String>,
    Params(q): Params<WaitQuery>,
) -> Result<Json<AgentView>, Error> {
    host.require(Scope::Read)?;
    let wait = duration(q.wait);
    Ok(Json(agents::get(&s, &host, &agent_ref, wait).await?))
}

/// The registration files: anonymous, as ERC-8004 clients fetch them.
pub(super) fn routes() -> Router<AppState> {
    Router::new().route("/agents/{agent_ref}/registration.json", get(registration))
}

async fn registration(
    State(s): State<AppState>,
    Path(agent_ref): Path<String>,
) -> Result<Json<Value>, Error> {
    Ok(Json(agents::registration_file(&s, &agent_ref).await?))
}
