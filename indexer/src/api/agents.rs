//! Agents' passports (see [`crate::agents`]).

use alloy_primitives::U256;
use axum::extract::Path;
use axum::Json;

use super::dto::AsOfQuery;
use super::error::ApiError;
use super::params::{id_of, Params};
use super::state::{AppState, QueryMap, Shared};
use crate::agents::{Agents, Passport};

/// An ERC-8004 agent's passport: who owns it, its registration file and wallet, and its
/// reputation — the mean of the feedback Bursar's ReceiptRegistry gave for a receipt, on the
/// signature of the side that paid the agent or was paid by it (what `getSummary(agent,
/// [ReceiptRegistry])` answers on chain), every other feedback listed apart.
#[utoipa::path(get, path = "/v1/agents/{agentId}", operation_id = "getAgent", tag = "agents",
    params(("agentId" = String, Path, description = "The agent's ERC-8004 id (decimal)."), AsOfQuery),
    responses((status = 200, description = "The passport", body = Passport)))]
pub(super) async fn agent(
    s: Shared,
    Path(agent_id): Path<String>,
    q: QueryMap,
) -> Result<Json<Passport>, ApiError> {
    Ok(Json(passport_as_of(&s, &agent_id, "agentId", q).await?.0))
}

/// Agent `agent_id`'s (the path parameter `field`) passport as of the block `q` asks for, and
/// that block: what the API and the explorer's page answer.
pub(super) async fn passport_as_of(
    s: &AppState,
    agent_id: &str,
    field: &str,
    q: QueryMap,
) -> Result<(Passport, u64), ApiError> {
    let id: U256 = id_of(agent_id, field)?
        .parse()
        .expect("id_of answers a decimal");
    let mut p = Params::from(q.0);
    let at = p.as_of(&s.store).await?;
    p.finish()?;
    let agents = Agents {
        store: &s.store,
        metrics: &s.metrics,
        at: at.block,
    };
    let passport = agents.passport(id).await?.ok_or(ApiError::NotFound)?;
    Ok((passport, at.block))
}
