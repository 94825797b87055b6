//! x402 (v2): agents pay HTTP 402 APIs from their sessions, and the relayer is a facilitator
//! that verifies and settles x402 payments.
//!
//! * Agent side ([`pay`], `POST /v1/x402/pay`, capability token): takes a 402 answer's
//!   `PAYMENT-REQUIRED` value and answers the `PAYMENT-SIGNATURE` value to retry with, after
//!   the contracts' rules allowed the payment now (nothing is signed otherwise). It pays under
//!   Bursar's own scheme, `bursar-session`, when offered (one transaction: a `PaymentIntent`
//!   signed by the session key, settled by the wallet's `pay`); else x402's `batch-settlement`
//!   ([`channel`]: vouchers on a channel the session wallet deposited into under its rules);
//!   otherwise x402's `exact`, the session wallet being the payer of an EIP-3009 authorization
//!   it reserved under the same rules and vouches for (ERC-1271) when the token asks.
//! * Facilitator side ([`supported`], [`verify`], [`settle`]: `GET /x402/supported`,
//!   `POST /x402/verify`, `POST /x402/settle`, x402's bodies): `bursar-session` payments
//!   ([`session`]) and `exact` EIP-3009 payments from any payer, account or contract
//!   ([`exact`]), and `batch-settlement` channels into x402's escrow for any payer, with the
//!   relayer as their receiver authorizer ([`batch`]); checked against the chain at the latest
//!   block, settled through the transaction engine and answered once mined.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

use crate::kernel::App;
use crate::kernel::Error;

mod agent;
mod batch;
mod channel;
mod exact;
mod once;
mod pay;
mod payment;
mod session;
mod signature;
mod types;

pub use agent::{offer, Offer, OfferRequest, EXTENSION};
pub use batch::BATCH;
pub use channel::settle_deposits;
pub use pay::{pay, PayRequest};
pub use payment::Paid;
pub use session::SessionPayment;
pub use types::{
    network, purpose, FacilitatorRequest, PaymentPayload, PaymentRequired, Requirements, Resource,
    SettleResponse, VerifyResponse, EXACT, SCHEME, VERSION,
};
use types::{refuse, Refusal};

/// What `GET /x402/supported` answers: x402's `SupportedResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Supported {
    /// The (version, scheme, network) kinds settled here.
    pub kinds: Vec<Kind>,
    /// x402 extensions supported (none).
    pub extensions: Vec<String>,
    /// The accounts that send settlements, by CAIP-2 family.
    pub signers: BTreeMap<String, Vec<String>>,
}

/// A kind of payment this facilitator settles.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Kind {
    /// 2.
    pub x402_version: u32,
    /// `bursar-session`, `exact` or `batch-settlement`.
    pub scheme: &'static str,
    /// CAIP-2.
    pub network: String,
    /// `bursar-session`'s: `{wallet}`; `batch-settlement`'s: `{receiverAuthorizer}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub extra: Option<Value>,
}

/// `GET /x402/supported`.
pub async fn supported(app: &App) -> Result<Supported, Error> {
    let signers: Vec<String> = app.engine.signers().iter().map(|a| a.to_string()).collect();
    let network = network(app.chain_id);
    Ok(Supported {
        kinds: vec![
            Kind {
                x402_version: VERSION,
                scheme: SCHEME,
                network: network.clone(),
                extra: Some(json!({ "wallet": app.contracts.wallet.to_string() })),
            },
            Kind {
                x402_version: VERSION,
                scheme: EXACT,
                network: network.clone(),
                extra: None,
            },
            Kind {
                x402_version: VERSION,
                scheme: BATCH,
                network,
                extra: Some(batch::supported_extra(app).await?),
            },
        ],
        extensions: Vec::new(),
        signers: BTreeMap::from([("eip155:*".to_owned(), signers)]),
    })
}

fn unsupported(scheme: &str) -> Refusal {
    refuse(
        "unsupported_scheme",
        format!("this facilitator settles {SCHEME}, {EXACT} and {BATCH}, not {scheme:?}"),
    )
}

/// A facilitator request from its JSON: an x402 version other than 2 (whose bodies have another
/// shape) is refused as x402 refuses it (`invalid_x402_version`), not as a malformed body.
fn facilitator_request(body: Value) -> Result<Result<FacilitatorRequest, Refusal>, Error> {
    let version = |v: Option<&Value>| v.and_then(|v| v.get("x402Version")).cloned();
    let versions = [version(Some(&body)), version(body.get("paymentPayload"))];
    if versions
        .iter()
        .flatten()
        .any(|v| v.as_u64() != Some(VERSION.into()))
    {
        return Ok(Err(refuse(
            "invalid_x402_version",
            "this facilitator speaks x402 version 2",
        )));
    }
    serde_path_to_error::deserialize(body).map(Ok).map_err(|e| {
        let path = e.path().to_string();
        Error::Invalid {
            message: format!("invalid JSON body at {path}: {}", e.into_inner()),
            details: json!({ "field": path }),
        }
    })
}

/// `POST /x402/verify`: the payload checked against the server's requirements and the chain.
pub async fn verify(app: &App, body: Value) -> Result<VerifyResponse, Error> {
    let req = match facilitator_request(body)? {
        Ok(req) => req,
        Err(refusal) => return Ok(VerifyResponse::refused(refusal)),
    };
    let payer = match req.payment_requirements.scheme.as_str() {
        SCHEME => session::check(app, &req).await?.map(|c| c.payer),
        EXACT => exact::verify(app, &req).await?,
        BATCH => return batch::verify(app, &req).await,
        other => Err(unsupported(other)),
    };
    Ok(payer.map_or_else(VerifyResponse::refused, VerifyResponse::valid))
}

/// `POST /x402/settle`: verified again, then settled on chain through the transaction engine;
/// answered once mined. A payment is never settled or reported settled twice.
pub async fn settle(app: &App, body: Value) -> Result<SettleResponse, Error> {
    let req = match facilitator_request(body)? {
        Ok(req) => req,
        Err(refusal) => return Ok(SettleResponse::failed(app, refusal, None)),
    };
    match req.payment_requirements.scheme.as_str() {
        SCHEME => session::settle(app, &req).await,
        EXACT => exact::settle(app, &req).await,
        BATCH => batch::settle(app, &req).await,
        other => Ok(SettleResponse::failed(app, unsupported(other), None)),
    }
}
