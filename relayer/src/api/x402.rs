//! x402: the facilitator's endpoints (for resource servers; no credentials) and the agent's.

use axum::extract::State;
use axum::Json;
use serde_json::Value;

use super::extract::{Body, Sandbox};
use super::state::AppState;
use crate::kernel::Error;
use crate::x402::{self, Paid, PayRequest, SettleResponse, VerifyResponse};

/// `GET /x402/supported`.
pub(super) async fn supported(State(s): State<AppState>) -> Json<Value> {
    Json(x402::supported(&s))
}

/// `POST /x402/verify` (the body is read as x402 of its version says).
pub(super) async fn verify(
    State(s): State<AppState>,
    Body(body): Body<Value>,
) -> Result<Json<VerifyResponse>, Error> {
    Ok(Json(x402::verify(&s, body).await?))
}

/// `POST /x402/settle`.
pub(super) async fn settle(
    State(s): State<AppState>,
    Body(body): Body<Value>,
) -> Result<Json<SettleResponse>, Error> {
    Ok(Json(x402::settle(&s, body).await?))
}

/// `POST /v1/x402/pay`: the sandbox's payment of a 402 answer.
pub(super) async fn pay(
    State(s): State<AppState>,
    Sandbox(session): Sandbox,
    Body(req): Body<PayRequest>,
) -> Result<Json<Paid>, Error> {
    Ok(Json(x402::pay(&s, &session, req).await?))
}
