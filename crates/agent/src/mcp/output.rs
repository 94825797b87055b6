//! Each tool's `outputSchema`: what its `structuredContent` holds when it succeeds (an error's
//! content is text and the structure it carries, if any, is not held to it). They name the
//! fields a model or a client relies on and let the relayer add others.

use std::sync::Arc;

use rmcp::model::JsonObject;
use serde_json::{json, Value};

fn object(schema: Value) -> Arc<JsonObject> {
    match schema {
        Value::Object(map) => Arc::new(map),
        _ => unreachable!("every schema here is an object"),
    }
}

/// An amount in base units (a decimal string) and as people read it.
fn money() -> Value {
    json!({
        "type": "object",
        "properties": {
            "amount": { "type": "string", "description": "Base units, decimal." },
            "display": { "type": "string", "description": "In the token's units: 1.50 USDC." }
        },
        "required": ["amount", "display"]
    })
}

fn nullable(schema: Value) -> Value {
    json!({ "anyOf": [schema, { "type": "null" }] })
}

/// A payment as the relayer shows it.
fn payment() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": { "type": "string", "description": "pay_…" },
            "status": {
                "type": "string",
                "enum": ["queued", "submitted", "mined", "confirmed", "pending_approval",
                         "rejected", "failed", "expired"]
            },
            "sessionId": { "type": "string" },
            "to": { "type": "string" },
            "amount": { "type": "string", "description": "Base units, decimal." },
            "purpose": { "type": "string" },
            "transactionHash": { "type": ["string", "null"] },
            "receiptId": { "type": ["string", "null"] },
            "pendingId": { "type": ["string", "null"] },
            "approvalUrl": { "type": "string" },
            "error": nullable(json!({
                "type": "object",
                "properties": { "code": { "type": "string" } },
                "required": ["code"]
            }))
        },
        "required": ["id", "status", "sessionId", "to", "amount"]
    })
}

/// `session_limits`.
pub(super) fn limits() -> Arc<JsonObject> {
    object(json!({
        "type": "object",
        "properties": {
            "sessionId": { "type": "string" },
            "canPay": { "type": "boolean" },
            "token": {
                "type": "object",
                "properties": {
                    "address": { "type": "string" },
                    "symbol": { "type": "string" },
                    "decimals": { "type": "integer" }
                },
                "required": ["address", "symbol", "decimals"]
            },
            "remainingDeposit": money(),
            "period": nullable(json!({
                "type": "object",
                "properties": {
                    "seconds": { "type": "integer" },
                    "budget": money(),
                    "remaining": money(),
                    "refillsAt": { "type": "integer" }
                },
                "required": ["remaining", "refillsAt"]
            })),
            "perPaymentCap": nullable(money()),
            "coSignThreshold": nullable(money()),
            "counterparties": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "address": { "type": "string" },
                        "label": { "type": ["string", "null"] },
                        "maxPerPayment": nullable(money())
                    },
                    "required": ["address"]
                }
            },
            "expiresAt": { "type": "integer" },
            "x402Channels": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "channelId": { "type": "string" },
                        "receiver": { "type": "string" },
                        "deposited": money(),
                        "vouched": money(),
                        "unvouched": money()
                    },
                    "required": ["channelId", "receiver", "deposited", "vouched", "unvouched"]
                }
            }
        },
        "required": ["sessionId", "canPay", "token", "remainingDeposit", "counterparties",
                     "expiresAt"]
    }))
}

/// `pay`: the payment, and what to do next when it waits for the owner.
pub(super) fn paid() -> Arc<JsonObject> {
    object(json!({
        "type": "object",
        "properties": {
            "payment": payment(),
            "next": { "type": "string", "description": "What happens next, when it waits." }
        },
        "required": ["payment"]
    }))
}

/// `payment_status`.
pub(super) fn payment_status() -> Arc<JsonObject> {
    object(payment())
}

/// `fetch`.
pub(super) fn fetched() -> Arc<JsonObject> {
    object(json!({
        "type": "object",
        "properties": {
            "status": { "type": "integer", "description": "The HTTP status." },
            "headers": { "type": "object", "additionalProperties": { "type": "string" } },
            "body": { "type": "string", "description": "The body, when it is text." },
            "bodyBase64": { "type": "string", "description": "The body, when it is not text." },
            "truncated": { "type": "boolean", "description": "The body was longer than shown." },
            "payment": nullable(json!({
                "type": "object",
                "description": "The settlement the server announced (x402's SettleResponse)."
            }))
        },
        "required": ["status", "headers", "truncated"]
    }))
}

/// `record_provenance`.
pub(super) fn provenance() -> Arc<JsonObject> {
    object(json!({
        "type": "object",
        "properties": {
            "id": { "type": "string", "description": "prov_…" },
            "status": { "type": "string" },
            "sessionId": { "type": "string" },
            "recordId": { "type": ["string", "null"] },
            "transactionHash": { "type": ["string", "null"] }
        },
        "required": ["id", "status", "sessionId"]
    }))
}

/// `rate_counterparty`.
pub(super) fn feedback() -> Arc<JsonObject> {
    object(json!({
        "type": "object",
        "properties": {
            "id": { "type": "string", "description": "fb_…" },
            "status": { "type": "string", "description": "queued, submitted, given or failed" },
            "agentId": { "type": "string" },
            "feedbackIndex": { "type": ["integer", "null"] },
            "transactionHash": { "type": ["string", "null"] }
        },
        "required": ["id", "status", "agentId"]
    }))
}

/// `counterparty_reputation`: the indexer's passport.
pub(super) fn passport() -> Arc<JsonObject> {
    object(json!({
        "type": "object",
        "properties": {
            "agentId": { "type": "string" },
            "owner": { "type": "string" },
            "agentWallet": { "type": "string", "description": "Where it is paid (zero: unset)." },
            "agentURI": { "type": "string" },
            "reputation": {
                "type": "object",
                "description": "count and value (at decimals) over feedback a payment backs; notCounted: the rest."
            }
        },
        "required": ["agentId", "owner", "reputation"]
    }))
}

/// `session_history`.
pub(super) fn history() -> Arc<JsonObject> {
    object(json!({
        "type": "object",
        "properties": {
            "payments": { "type": "array", "items": payment() },
            "events": {
                "description": "The indexer's events, or why they could not be read.",
                "anyOf": [{ "type": "array" }, { "type": "object" }]
            }
        },
        "required": ["payments"]
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every schema is an object schema (MCP requires `type: object` at the top).
    #[test]
    fn every_output_schema_is_an_object() {
        for schema in [
            limits(),
            paid(),
            payment_status(),
            fetched(),
            provenance(),
            history(),
        ] {
            assert_eq!(schema["type"], "object");
            assert!(schema["required"].is_array());
        }
    }
}
