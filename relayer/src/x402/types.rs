//! x402 v2's messages and the terms both sides share: requirements, payloads, the
//! facilitator's answers, the purpose a payment names, refusals.

use alloy_primitives::{keccak256, Address, B256, U256};
use alloy_sol_types::SolValue;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::kernel::App;
use crate::kernel::Error;

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
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = X402Request)]
pub struct FacilitatorRequest {
    /// 2.
    #[serde(default)]
    pub x402_version: Option<u32>,
    /// What the client sent (x402's `PaymentPayload`).
    #[schema(value_type = Object)]
    pub payment_payload: PaymentPayload,
    /// What the resource server asks (x402's `PaymentRequirements`).
    #[schema(value_type = Object)]
    pub payment_requirements: Requirements,
}

/// What `verify` answers.
#[derive(Debug, Serialize, utoipa::ToSchema)]
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
    /// Whose money it is: the session key that signed, the `exact` or channel payer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payer: Option<String>,
    /// Scheme-specific facts (`batch-settlement`: the channel's state).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub extra: Option<Value>,
}

/// What `settle` answers.
#[derive(Debug, Serialize, utoipa::ToSchema)]
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
    /// What was settled, in base units, when a scheme settles another amount than asked
    /// (`batch-settlement`'s deposits and refunds, what a `settle` sent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amount: Option<String>,
    /// Scheme-specific facts (`batch-settlement`: the channel's state after it).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub extra: Option<Value>,
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

/// A refusal: (reason, message).
pub(crate) type Refusal = (String, String);

pub(crate) fn refuse(reason: &str, message: impl Into<String>) -> Refusal {
    (reason.to_owned(), message.into())
}

impl VerifyResponse {
    pub(crate) fn valid(payer: Address) -> Self {
        VerifyResponse {
            is_valid: true,
            invalid_reason: None,
            invalid_message: None,
            payer: Some(payer.to_string()),
            extra: None,
        }
    }

    pub(crate) fn refused((reason, message): Refusal) -> Self {
        VerifyResponse {
            is_valid: false,
            invalid_reason: Some(reason),
            invalid_message: Some(message),
            payer: None,
            extra: None,
        }
    }
}

impl SettleResponse {
    pub(crate) fn settled(app: &App, payer: Address, transaction: String) -> Self {
        SettleResponse {
            success: true,
            error_reason: None,
            error_message: None,
            payer: Some(payer.to_string()),
            transaction,
            network: network(app.chain_id),
            amount: None,
            extra: None,
        }
    }

    pub(crate) fn failed(app: &App, (reason, message): Refusal, payer: Option<Address>) -> Self {
        SettleResponse {
            success: false,
            error_reason: Some(reason),
            error_message: Some(message),
            payer: payer.map(|p| p.to_string()),
            transaction: String::new(),
            network: network(app.chain_id),
            amount: None,
            extra: None,
        }
    }
}

/// What requirements ask: the asset, the payee, the amount and `extra`.
pub(crate) struct Asked {
    pub(crate) asset: Address,
    pub(crate) pay_to: Address,
    pub(crate) amount: U256,
    extra: Option<Value>,
}

impl Asked {
    /// `r`'s terms; `None` when an address or the amount does not parse.
    pub(crate) fn of(r: &Requirements) -> Option<Asked> {
        Some(Asked {
            asset: r.asset.parse().ok()?,
            pay_to: r.pay_to.parse().ok()?,
            amount: U256::from_str_radix(&r.amount, 10).ok()?,
            extra: r.extra.clone(),
        })
    }

    /// `extra.key` when it is text.
    pub(crate) fn extra(&self, key: &str) -> Option<String> {
        let value = self.extra.as_ref()?.get(key)?.as_str()?;
        Some(value.to_owned())
    }
}

/// A `PAYMENT-REQUIRED` value: base64 JSON, or the object.
pub(crate) fn decode_required(value: Value) -> Result<PaymentRequired, Error> {
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
    use serde_json::json;

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
