//! x402: the facilitator's endpoints (for resource servers; no credentials) and the agent's.

use axum::extract::State;
use axum::Json;
use serde_json::Value;

use super::extract::{Body, Sandbox};
use super::state::AppState;
use crate::kernel::Error;
use crate::x402::{
    self, FacilitatorRequest, Offer, OfferRequest, Paid, PayRequest, SettleResponse, Supported,
    VerifyResponse,
};

/// x402 v2 facilitator: the kinds it settles (`bursar-session`, `exact` and `batch-settlement`
/// on this chain).
#[utoipa::path(get, path = "/x402/supported", operation_id = "x402Supported", tag = "x402",
    responses((status = 200, description = "The kinds", body = Supported)))]
pub(super) async fn supported(State(s): State<AppState>) -> Result<Json<Supported>, Error> {
    Ok(Json(x402::supported(&s).await?))
}

/// x402 v2 facilitator: verify a `bursar-session` payment (signature and every session rule)
/// or an `exact` one from any payer (EIP-3009 or ERC-7710), simulated now.
#[utoipa::path(post, path = "/x402/verify", operation_id = "x402Verify", tag = "x402",
    request_body = FacilitatorRequest,
    responses((status = 200, description = "Valid, or why not", body = VerifyResponse)))]
pub(super) async fn verify(
    State(s): State<AppState>,
    Body(body): Body<Value>,
) -> Result<Json<VerifyResponse>, Error> {
    Ok(Json(x402::verify(&s, body).await?))
}

/// x402 v2 facilitator: settle it through the transaction engine, answered once mined.
#[utoipa::path(post, path = "/x402/settle", operation_id = "x402Settle", tag = "x402",
    request_body = FacilitatorRequest,
    responses((status = 200, description = "Settled, or why not", body = SettleResponse)))]
pub(super) async fn settle(
    State(s): State<AppState>,
    Body(body): Body<Value>,
) -> Result<Json<SettleResponse>, Error> {
    Ok(Json(x402::settle(&s, body).await?))
}

/// Pay a 402 answer's `PAYMENT-REQUIRED` from the session by the cheapest option it offers,
/// checked by the wallet's rules first: a signed `bursar-session` payment, an `exact` ERC-7710
/// delegation, or an `exact` EIP-3009 authorization the wallet reserved.
#[utoipa::path(post, path = "/v1/x402/pay", operation_id = "x402Pay", tag = "x402",
    request_body = PayRequest, security(("capabilityToken" = [])),
    responses((status = 200, description = "The `PAYMENT-SIGNATURE` to retry with", body = Paid)))]
pub(super) async fn pay(
    State(s): State<AppState>,
    Sandbox(session): Sandbox,
    Body(req): Body<PayRequest>,
) -> Result<Json<Paid>, Error> {
    Ok(Json(x402::pay(&s, &session, req).await?))
}

/// Sell something the session's agent made: the `PAYMENT-REQUIRED` of a 402 that is paid at
/// the agent's `agentWallet` in the session's token (`bursar-session`, and `exact` where the
/// token has EIP-712), naming the agent (`erc8004-agent` extension); settle through this
/// relayer's `/x402/verify` and `/x402/settle`.
#[utoipa::path(post, path = "/v1/x402/offer", operation_id = "x402Offer", tag = "x402",
    request_body = OfferRequest, security(("capabilityToken" = [])),
    responses((status = 200, description = "The 402's `PAYMENT-REQUIRED`", body = Offer)))]
pub(super) async fn offer(
    State(s): State<AppState>,
    Sandbox(session): Sandbox,
    Body(req): Body<OfferRequest>,
) -> Result<Json<Offer>, Error> {
    Ok(Json(x402::offer(&s, &session, req).await?))
}
