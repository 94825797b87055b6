//! x402 (v2): agents pay HTTP 402 APIs from their sessions, and the relayer is a facilitator
//! that verifies and settles x402 payments.
//!
//! * Agent side ([`pay`], `POST /v1/x402/pay`, capability token): takes a 402 answer's
//!   `PAYMENT-REQUIRED` value and answers the `PAYMENT-SIGNATURE` value to retry with, after
//!   the contracts' rules allowed the payment now (nothing is signed otherwise). It pays under
//!   Bursar's own scheme, `bursar-session`, when offered (one transaction: a `PaymentIntent`
//!   signed by the session key, settled by the wallet's `pay`); otherwise x402's `exact`, the
//!   session wallet being the payer of an EIP-3009 authorization it reserved under the same
//!   rules and vouches for (ERC-1271) when the token asks.
//! * Facilitator side ([`supported`], [`verify`], [`settle`]: `GET /x402/supported`,
//!   `POST /x402/verify`, `POST /x402/settle`, x402's bodies): `bursar-session` payments
//!   ([`session`]) and `exact` EIP-3009 payments from any payer, account or contract
//!   ([`exact`]); checked against the chain at the latest block, settled through the
//!   transaction engine and answered once mined.

use alloy_primitives::{keccak256, Address, B256, U256};
use alloy_sol_types::SolValue;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::kernel::App;
use crate::kernel::Error;

mod exact;
mod pay;
mod session;

pub use pay::{pay, Paid, PayRequest};
pub use session::SessionPayment;

/// Bursar's x402 scheme.
pub const SCHEME: &str = "bursar-session";

/// x402's `exact` scheme (EIP-3009 on EVM).
pub const EXACT: &str = "exact";

/// The x402 version spoken.
pub const VERSION: u32 = 2;

/// What a resource asks to be paid: one of a 402's `accepts`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Requirements {
    /// `bursar-session` for Bursar.
    pub scheme: String,
    /// CAIP-2: `eip155:<chain id>`.
    pub network: String,
    /// Base units, decimal.
    pub amount: String,
    /// The token.
    pub asset: String,
    /// The payee.
    pub pay_to: String,
    /// How long a payment for it stays valid.
    pub max_timeout_seconds: u64,
    /// Scheme-specific.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Value>,
}

/// The resource paid for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Its URL.
    pub url: String,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// A 402 answer's `PAYMENT-REQUIRED`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentRequired {
    /// 2.
    pub x402_version: u32,
    /// Why the last attempt was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What is paid for.
    pub resource: Resource,
    /// The ways it may be paid.
    pub accepts: Vec<Requirements>,
    /// Extensions, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Value>,
}

/// A `PAYMENT-SIGNATURE`: the requirements chosen and the scheme's payload.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentPayload {
    /// 2.
    pub x402_version: u32,
    /// What is paid for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<Resource>,
    /// The requirements chosen, as offered.
    pub accepted: Requirements,
    /// For `bursar-session`: a [`SessionPayment`].
    pub payload: Value,
    /// Extensions, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Value>,
}

/// `POST /x402/verify` and `/x402/settle`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FacilitatorRequest {
    /// 2.
    #[serde(default)]
    pub x402_version: Option<u32>,
    /// What the client sent.
    pub payment_payload: PaymentPayload,
    /// What the resource server asks.
    pub payment_requirements: Requirements,
}

/// What `verify` answers.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyResponse {
    /// Whether settling it would pay.
    pub is_valid: bool,
    /// Why not: a stable code (a contract error's name when the wallet refuses).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid_reason: Option<String>,
    /// Why not, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid_message: Option<String>,
    /// The session key that signed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payer: Option<String>,
}

/// What `settle` answers.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SettleResponse {
    /// Whether the payment executed on chain.
    pub success: bool,
    /// Why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_reason: Option<String>,
    /// Why not, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// The session key that signed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payer: Option<String>,
    /// The transaction's hash ("" when it did not execute).
    pub transaction: String,
    /// CAIP-2.
    pub network: String,
}

/// The chain as CAIP-2.
pub fn network(chain_id: u64) -> String {
    format!("eip155:{chain_id}")
}

/// A payment's purpose: keccak-256 of the ABI encoding of (resource URL, scheme, network,
/// asset, payTo, amount, maxTimeoutSeconds), so that the receipt on chain names what was bought
/// and on which terms. `None` when an address or the amount does not parse.
pub fn purpose(url: &str, r: &Requirements) -> Option<B256> {
    let asset: Address = r.asset.parse().ok()?;
    let pay_to: Address = r.pay_to.parse().ok()?;
    let amount = U256::from_str_radix(&r.amount, 10).ok()?;
    let encoded = (
        url.to_owned(),
        r.scheme.clone(),
        r.network.clone(),
        asset,
        pay_to,
        amount,
        U256::from(r.max_timeout_seconds),
    )
        .abi_encode_params();
    Some(keccak256(encoded))
}

/// `GET /x402/supported`.
pub fn supported(app: &App) -> Value {
    let signers: Vec<String> = app.engine.signers().iter().map(|a| a.to_string()).collect();
    let network = network(app.chain_id);
    json!({
        "kinds": [{
            "x402Version": VERSION,
            "scheme": SCHEME,
            "network": network,
            "extra": { "wallet": app.contracts.wallet.to_string() },
        }, {
            "x402Version": VERSION,
            "scheme": EXACT,
            "network": network,
        }],
        "extensions": [],
        "signers": { "eip155:*": signers },
    })
}

/// A refusal: (reason, message).
pub(super) type Refusal = (String, String);

pub(super) fn refuse(reason: &str, message: impl Into<String>) -> Refusal {
    (reason.to_owned(), message.into())
}

fn unsupported(scheme: &str) -> Refusal {
    refuse(
        "unsupported_scheme",
        format!("this facilitator settles {SCHEME} and {EXACT}, not {scheme:?}"),
    )
}

impl VerifyResponse {
    fn valid(payer: Address) -> Self {
        VerifyResponse {
            is_valid: true,
            invalid_reason: None,
            invalid_message: None,
            payer: Some(payer.to_string()),
        }
    }

    fn refused((reason, message): Refusal) -> Self {
        VerifyResponse {
            is_valid: false,
            invalid_reason: Some(reason),
            invalid_message: Some(message),
            payer: None,
        }
    }
}

impl SettleResponse {
    fn settled(app: &App, payer: Address, transaction: String) -> Self {
        SettleResponse {
            success: true,
            error_reason: None,
            error_message: None,
            payer: Some(payer.to_string()),
            transaction,
            network: network(app.chain_id),
        }
    }

    fn failed(app: &App, (reason, message): Refusal, payer: Option<Address>) -> Self {
        SettleResponse {
            success: false,
            error_reason: Some(reason),
            error_message: Some(message),
            payer: payer.map(|p| p.to_string()),
            transaction: String::new(),
            network: network(app.chain_id),
        }
    }
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
        other => Ok(SettleResponse::failed(app, unsupported(other), None)),
    }
}

/// A `PAYMENT-REQUIRED` value: base64 JSON, or the object.
pub(super) fn decode_required(value: Value) -> Result<PaymentRequired, Error> {
    let field = "paymentRequired";
    let object = match value {
        Value::String(text) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text.trim())
                .map_err(|_| Error::invalid(field, "not base64"))?;
            serde_json::from_slice(&bytes)
                .map_err(|e| Error::invalid(field, format!("not JSON: {e}")))?
        }
        object => object,
    };
    let required: PaymentRequired = serde_json::from_value(object)
        .map_err(|e| Error::invalid(field, format!("not an x402 PaymentRequired: {e}")))?;
    if required.x402_version != VERSION {
        return Err(Error::invalid(field, "x402Version must be 2"));
    }
    Ok(required)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requirements() -> Requirements {
        Requirements {
            scheme: SCHEME.into(),
            network: "eip155:412346".into(),
            amount: "5000000".into(),
            asset: format!("{:#x}", Address::repeat_byte(7)),
            pay_to: format!("{:#x}", Address::repeat_byte(0xa1)),
            max_timeout_seconds: 60,
            extra: None,
        }
    }

    #[test]
    fn the_purpose_binds_the_resource_and_every_term() {
        let r = requirements();
        let p = purpose("https://api.example/data", &r).unwrap();
        assert_ne!(p, purpose("https://api.example/other", &r).unwrap());
        for changed in [
            Requirements {
                amount: "5000001".into(),
                ..r.clone()
            },
            Requirements {
                pay_to: format!("{:#x}", Address::repeat_byte(0xb2)),
                ..r.clone()
            },
            Requirements {
                network: "eip155:1".into(),
                ..r.clone()
            },
            Requirements {
                max_timeout_seconds: 61,
                ..r.clone()
            },
        ] {
            assert_ne!(p, purpose("https://api.example/data", &changed).unwrap());
        }
        // Addresses in any case are the same address.
        let upper = Requirements {
            pay_to: r.pay_to.to_uppercase().replace("0X", "0x"),
            ..r.clone()
        };
        assert_eq!(p, purpose("https://api.example/data", &upper).unwrap());
        assert!(purpose(
            "u",
            &Requirements {
                amount: "-1".into(),
                ..r
            }
        )
        .is_none());
    }

    #[test]
    fn payment_required_is_read_from_the_header_or_the_object() {
        let required = json!({ "x402Version": 2, "resource": { "url": "https://api.example/data" }, "accepts": [requirements()] });
        let header = base64::engine::general_purpose::STANDARD.encode(required.to_string());
        assert_eq!(
            decode_required(Value::String(header)).unwrap().accepts[0],
            requirements()
        );
        assert_eq!(
            decode_required(required.clone()).unwrap().resource.url,
            "https://api.example/data"
        );
        let mut v1 = required;
        v1["x402Version"] = json!(1);
        assert_eq!(decode_required(v1).unwrap_err().code(), "invalid_request");
        assert_eq!(
            decode_required(json!("%%%")).unwrap_err().code(),
            "invalid_request"
        );
    }
}
