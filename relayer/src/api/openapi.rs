//! The OpenAPI 3.1 document served at `/openapi.json`. A test walks every path and method in it
//! against the router, so a route cannot be documented without existing.

use serde_json::{json, Value};

use crate::webhooks::EVENTS;

fn r(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

fn body(schema: &str) -> Value {
    json!({ "required": true, "content": { "application/json": { "schema": r(schema) } } })
}

fn ok(status: &str, schema: &str, description: &str) -> Value {
    json!({ status: {
        "description": description,
        "content": { "application/json": { "schema": r(schema) } },
    }})
}

fn op(summary: &str, security: &str, request: Option<&str>, responses: Value) -> Value {
    let mut responses = responses;
    let errors = responses.as_object_mut().expect("responses are an object");
    for (status, what) in [
        ("400", "Malformed request (`invalid_request`)."),
        ("401", "Missing, unknown, revoked or expired credentials."),
        ("404", "Nothing with this id that the caller may see."),
        ("409", "Conflicts with the state of what it names (see `code`)."),
        ("422", "Refused by the contracts: `code` is the contract error's name, `details` its arguments."),
        ("429", "Rate limited (`Retry-After`)."),
        ("503", "The database or the node is unavailable; retry."),
    ] {
        errors.entry(status).or_insert_with(|| {
            json!({ "description": what, "content": { "application/json": { "schema": r("Error") } } })
        });
    }
    let mut op = json!({
        "summary": summary,
        "security": [{ security: [] }],
        "parameters": [{ "name": "Idempotency-Key", "in": "header", "required": false,
            "schema": { "type": "string", "maxLength": 255 },
            "description": "POST only: the same key and body get the first response again (`Idempotent-Replayed: true`); another body gets 409 `idempotency_key_reused`." }],
        "responses": responses,
    });
    if let Some(schema) = request {
        op["requestBody"] = body(schema);
    }
    op
}

/// The document.
pub fn document() -> Value {
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Bursar relayer",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Bounded, audited money for sandboxed agents. Hosts authenticate with API keys (`bhk_…`), sandboxes with their session's capability token (`bct_…`), both as `Authorization: Bearer`. Owners sign EIP-712 typed data in their own wallets. Amounts are decimal strings in base units; errors are `{code, message, details}`.",
        },
        "components": {
            "securitySchemes": {
                "hostKey": { "type": "http", "scheme": "bearer", "description": "A host API key (bhk_…)." },
                "capabilityToken": { "type": "http", "scheme": "bearer", "description": "A session's capability token (bct_…)." },
                "hostKeyOrCapabilityToken": { "type": "http", "scheme": "bearer" },
                "none": { "type": "http", "scheme": "bearer", "description": "No credentials needed." },
            },
            "schemas": schemas(),
        },
        "paths": paths(),
    })
}

/// Schemas of the values most fields hold: an amount, an address, a hash or text, typed data.
fn common() -> (Value, Value, Value, Value) {
    (
        json!({ "type": "string", "pattern": "^[0-9]{1,78}$", "description": "Base units, decimal." }),
        json!({ "type": "string", "pattern": "^0x[0-9a-fA-F]{40}$" }),
        json!({ "type": "string", "description": "0x + 64 hex digits, or text whose keccak-256 is used." }),
        json!({ "type": "object", "description": "eth_signTypedData_v4 JSON: types, primaryType, domain, message." }),
    )
}

fn merge(mut a: Value, b: Value) -> Value {
    if let (Some(a), Value::Object(b)) = (a.as_object_mut(), b) {
        a.extend(b);
    }
    a
}

fn schemas() -> Value {
    merge(schemas_sessions(), schemas_payments())
}

fn schemas_sessions() -> Value {
    let (amount, address, hash_or_text, typed_data) = common();
    json!({
                "Error": { "type": "object", "required": ["code", "message", "details"], "properties": {
                    "code": { "type": "string", "description": "Stable: unauthorized, forbidden, not_found, invalid_request, session_not_open, session_already_opened, session_terms_mismatch (details: field, prepared, onChain), idempotency_key_reused, rate_limited, unavailable… or a contract error's name (WalletPeriodBudgetExceeded…)." },
                    "message": { "type": "string" },
                    "details": { "type": "object" } } },
                "PrepareRequest": { "type": "object",
                    "required": ["owner", "token", "deposit", "expiresAt", "allowlistId"],
                    "properties": {
                        "owner": address, "guardian": address, "token": address, "deposit": amount,
                        "perPaymentCap": amount, "periodBudget": amount, "periodSeconds": { "type": "integer" },
                        "coSignThreshold": amount, "validAfter": { "type": "integer" }, "expiresAt": { "type": "integer" },
                        "leaseSeconds": { "type": "integer" }, "allowlistId": amount, "metadata": hash_or_text,
                        "sessionKey": address, "provider": { "type": "string" }, "sandboxId": { "type": "string" } } },
                "Prepared": { "type": "object", "properties": {
                    "preparedId": { "type": "string" }, "sessionId": { "type": "string" }, "sessionKey": address,
                    "leaseKeeper": address,
                    "typedData": { "type": "object", "properties": { "openSession": typed_data, "permit": typed_data } },
                    "sandboxTags": { "type": "object", "description": "With a provider: tags to set on the sandbox (evidence only; events are matched by provider and sandbox id).",
                        "properties": { "field": { "enum": ["metadata", "labels", "tags", "userMetadata"] }, "tags": { "type": "object" } } } } },
                "OpenRequest": { "type": "object", "required": ["preparedId", "ownerSignature"], "properties": {
                    "preparedId": { "type": "string" }, "ownerSignature": { "type": "string" }, "permitSignature": { "type": "string" } } },
                "RegisterRequest": { "type": "object", "required": ["preparedId"], "properties": { "preparedId": { "type": "string" } } },
                "Opened": { "type": "object", "properties": {
                    "sessionId": { "type": "string" }, "capabilityToken": { "type": "string", "description": "Shown once." },
                    "status": { "enum": ["open", "opening"] }, "transactionHash": { "type": "string" } } },
                "Session": { "type": "object", "properties": {
                    "sessionId": { "type": "string" }, "status": { "enum": ["prepared", "opening", "open", "failed"] },
                    "owner": address, "sessionKey": address, "leaseKeeper": address,
                    "provider": { "type": "string" }, "sandboxId": { "type": "string" }, "terms": { "type": "object" },
                    "capabilityRevoked": { "type": "boolean" }, "lastHeartbeatAt": { "type": "integer" },
                    "createdAt": { "type": "integer" },
                    "sandboxState": { "enum": ["running", "paused", "terminated", null] },
                    "windingDown": { "type": "boolean", "description": "The relayer is revoking, then closing, it (its sandbox terminated)." },
                    "lifecycle": { "type": "array", "description": "Only on GET /v1/sessions/{id}: the sandbox's lifecycle events, newest first.",
                        "items": { "type": "object", "properties": {
                            "id": { "type": "string" }, "source": { "type": "string" }, "eventId": { "type": "string" },
                            "kind": { "type": "string" }, "lifecycle": { "enum": ["created", "running", "paused", "resumed", "terminated", "other"] },
                            "at": { "type": "integer" }, "action": { "enum": ["wind_down", "hold_lease", "renew_lease", "none", "stale", "ended"] },
                            "receivedAt": { "type": "integer" }, "report": { "type": "object", "description": "Echoed metadata and reported usage." } } } },
                    "metering": { "type": "array", "description": "Only on GET /v1/sessions/{id}: usage charged at the host's rates, oldest first.",
                        "items": { "type": "object", "properties": {
                            "run": { "type": "string" }, "metered": amount, "amount": amount, "paymentId": { "type": "string" },
                            "error": { "type": "string" }, "purpose": { "type": "string" }, "summary": { "type": "object" }, "createdAt": { "type": "integer" } } } },
                    "chain": { "type": "object", "properties": {
                        "status": { "enum": ["unknown", "active", "revoked", "closed"] }, "canPay": { "type": "boolean" },
                        "deposit": amount, "spent": amount, "reserved": amount, "remainingDeposit": amount,
                        "remainingPeriodBudget": amount, "periodSpent": amount, "periodStart": { "type": "integer" },
                        "leaseExpiresAt": { "type": "integer" } } } } },
                "SessionList": { "type": "object", "properties": { "sessions": { "type": "array", "items": r("Session") } } },
                "Revoked": { "type": "object", "properties": {
                    "sessionId": { "type": "string" }, "capabilityRevoked": { "type": "boolean" },
                    "onChain": { "enum": ["revoked", "submitted", "already", "not_open", "not_guardian"] },
                    "transactionHash": { "type": "string" } } },
                "Closing": { "type": "object", "properties": { "sessionId": { "type": "string" }, "refund": amount,
                    "status": { "enum": ["closed", "closing"] }, "transactionHash": { "type": "string" } } },
                "Heartbeat": { "type": "object", "properties": {
                    "sessionId": { "type": "string" }, "leaseExpiresAt": { "type": "integer" }, "renewalSubmitted": { "type": "boolean" },
                    "sandboxState": { "enum": ["running", "paused", "terminated", null], "description": "Paused or terminated: the lease is not renewed." } } },
                "Policy": { "type": "object", "properties": {
                    "onTerminated": { "enum": ["close", "revoke", "record"], "default": "close",
                        "description": "close: revoke, then close (refund to the owner); revoke: revoke only; record: record the event only." },
                    "onPaused": { "enum": ["hold_lease", "record"], "default": "hold_lease",
                        "description": "hold_lease: heartbeats stop renewing the lease until the sandbox runs again; record: record only." },
                    "metering": { "type": ["object", "null"], "description": "Rates (token base units) at which reported usage is paid from the session to payee; null: recorded only.",
                        "required": ["payee"], "properties": { "payee": address, "perVcpuSecond": amount, "perGbSecond": amount, "perProxyByte": amount } } } },
                "LifecycleRequest": { "type": "object", "required": ["state"], "properties": {
                    "state": { "enum": ["running", "paused", "resumed", "terminated"] },
                    "eventId": { "type": "string", "maxLength": 128, "description": "Deduplicates retries (default: a fresh id)." },
                    "at": { "type": "integer", "description": "Unix seconds (default: now)." },
                    "reason": { "type": "string", "maxLength": 512 } } },
                "LifecycleReceived": { "type": "object", "properties": {
                    "event": { "type": "string", "description": "lce_…; null for a duplicate or an ignored provider event." },
                    "duplicate": { "type": "boolean" },
                    "sessions": { "type": "array", "items": { "type": "object", "properties": {
                        "sessionId": { "type": "string" },
                        "action": { "enum": ["wind_down", "hold_lease", "renew_lease", "none", "stale", "ended"] } } } } } },
                "DecisionToSign": { "type": "object", "properties": {
                    "pendingId": { "type": "string" }, "approve": { "type": "boolean" }, "nonce": amount,
                    "deadline": { "type": "integer" }, "typedData": typed_data, "payment": { "type": "object" } } },
                "DecisionRequest": { "type": "object", "required": ["approve", "nonce", "deadline", "signature"], "properties": {
                    "approve": { "type": "boolean" }, "nonce": amount, "deadline": { "type": "integer" }, "signature": { "type": "string" } } },
                "Decided": { "type": "object", "properties": { "pendingId": { "type": "string" }, "approve": { "type": "boolean" }, "paymentId": { "type": "string" } } },
    })
}

fn schemas_payments() -> Value {
    let (amount, address, hash_or_text, _) = common();
    json!({
                "PayRequest": { "oneOf": [
                    { "type": "object", "required": ["to", "amount", "purpose"], "description": "Signed by the relayer with the custodial key.",
                      "properties": { "to": address, "amount": amount, "purpose": hash_or_text } },
                    { "type": "object", "required": ["to", "amount", "purpose", "nonce", "deadline", "signature"],
                      "description": "A PaymentIntent signed by the sandbox's own session key.",
                      "properties": { "to": address, "amount": amount, "purpose": { "type": "string" }, "nonce": amount,
                        "deadline": { "type": "integer" }, "signature": { "type": "string" } } } ] },
                "Payment": { "type": "object", "properties": {
                    "id": { "type": "string" },
                    "status": { "enum": ["queued", "submitted", "mined", "confirmed", "pending_approval", "rejected", "failed", "expired"] },
                    "sessionId": { "type": "string" }, "to": address, "amount": amount, "purpose": { "type": "string" },
                    "nonce": amount, "deadline": { "type": "integer" }, "transactionHash": { "type": "string" },
                    "blockNumber": { "type": "integer" }, "receiptId": { "type": "string" }, "pendingId": { "type": "string" },
                    "error": { "type": "object", "properties": { "code": { "type": "string" }, "details": { "type": "object" } } },
                    "createdAt": { "type": "integer" } } },
                "PaymentList": { "type": "object", "properties": { "payments": { "type": "array", "items": r("Payment") } } },
                "ProvenanceRequest": { "type": "object", "required": ["artifact"], "properties": {
                    "artifact": hash_or_text, "inputs": hash_or_text, "runtime": hash_or_text, "policy": hash_or_text,
                    "uri": hash_or_text, "parents": { "type": "array", "items": amount, "maxItems": 16 } } },
                "Provenance": { "type": "object", "properties": {
                    "id": { "type": "string" }, "status": { "enum": ["queued", "submitted", "recorded", "failed"] },
                    "sessionId": { "type": "string" }, "recordId": { "type": "string" }, "record": { "type": "object" },
                    "transactionHash": { "type": "string" }, "blockNumber": { "type": "integer" },
                    "error": { "type": "object" }, "createdAt": { "type": "integer" } } },
                "X402Request": { "type": "object", "required": ["paymentPayload", "paymentRequirements"], "properties": {
                    "x402Version": { "const": 2 }, "paymentPayload": { "type": "object" }, "paymentRequirements": { "type": "object" } } },
                "X402PayRequest": { "type": "object", "required": ["paymentRequired"], "properties": {
                    "paymentRequired": { "description": "The PAYMENT-REQUIRED header's value (base64 JSON) or the object itself.", "oneOf": [{ "type": "string" }, { "type": "object" }] } } },
                "WebhookRequest": { "type": "object", "required": ["url"], "properties": {
                    "url": { "type": "string", "format": "uri" },
                    "events": { "type": "array", "items": { "enum": EVENTS } } } },
                "Webhook": { "type": "object", "properties": {
                    "id": { "type": "string" }, "url": { "type": "string" }, "events": { "type": "array", "items": { "type": "string" } },
                    "secret": { "type": "string", "description": "whsec_…, only when created." }, "createdAt": { "type": "integer" } } },
                "WebhookList": { "type": "object", "properties": { "webhooks": { "type": "array", "items": r("Webhook") } } },
                "DeliveryList": { "type": "object", "properties": { "deliveries": { "type": "array", "items": { "type": "object", "properties": {
                    "messageId": { "type": "string" }, "eventType": { "type": "string" },
                    "status": { "enum": ["pending", "delivered", "dead"] }, "attempts": { "type": "integer" },
                    "lastStatus": { "type": "integer" }, "lastError": { "type": "string" }, "payload": { "type": "object" },
                    "createdAt": { "type": "integer" } } } } } },
                "Health": { "type": "object", "properties": { "ok": { "type": "boolean" }, "database": { "type": "boolean" }, "chainId": { "type": "integer" } } },
                "Host": { "type": "object", "properties": { "id": { "type": "string" }, "name": { "type": "string" }, "scopes": { "type": "array", "items": { "type": "string" } } } },
    })
}

fn paths() -> Value {
    merge(paths_sessions(), paths_payments())
}

fn paths_sessions() -> Value {
    json!({
            "/health": { "get": op("Database and node reachability", "none", None, ok("200", "Health", "Both answer (503 otherwise)")) },
            "/metrics": { "get": { "summary": "Prometheus metrics", "security": [{ "none": [] }],
                "responses": { "200": { "description": "Prometheus text", "content": { "text/plain": { "schema": { "type": "string" } } } } } } },
            "/openapi.json": { "get": { "summary": "This document", "security": [{ "none": [] }],
                "responses": { "200": { "description": "OpenAPI 3.1", "content": { "application/json": { "schema": { "type": "object" } } } } } } },
            "/v1/host": { "get": op("The calling key's host and scopes", "hostKey", None, ok("200", "Host", "The host")) },
            "/v1/sessions/prepare": { "post": op("Prepare a session: a custodial key, and typed data for the owner's wallet (scope: sessions)", "hostKey", Some("PrepareRequest"), ok("201", "Prepared", "Prepared")) },
            "/v1/sessions": {
                "post": op("Open a prepared session through the gateway with the owner's signatures (scope: sessions)", "hostKey", Some("OpenRequest"), ok("201", "Opened", "Opened (or still opening)")),
                "get": { "parameters": [
                        { "name": "provider", "in": "query", "schema": { "type": "string" } },
                        { "name": "sandboxId", "in": "query", "schema": { "type": "string" } },
                        { "name": "before", "in": "query", "schema": { "type": "integer" }, "description": "createdAt of the last one seen (paging)." },
                        { "name": "limit", "in": "query", "schema": { "type": "integer", "maximum": 1000 } } ],
                    "summary": "The host's sessions, newest first (scope: read)", "security": [{ "hostKey": [] }],
                    "responses": ok("200", "SessionList", "Sessions") },
            },
            "/v1/sessions/register": { "post": op("Register a prepared session the owner opened with its own wallet, with exactly the prepared terms (scope: sessions)", "hostKey", Some("RegisterRequest"), ok("201", "Opened", "Registered")) },
            "/v1/sessions/{id}": { "get": op("A session with its on-chain state (scope: read)", "hostKey", None, ok("200", "Session", "The session")) },
            "/v1/sessions/{id}/revoke": { "post": op("Revoke: the capability token at once, on chain when the relayer is guardian (scope: sessions)", "hostKey", None, ok("200", "Revoked", "Revoked")) },
            "/v1/sessions/{id}/close": { "post": op("Close on chain, refunding the owner (scope: sessions)", "hostKey", None, ok("202", "Closing", "Close queued")) },
            "/v1/sessions/{id}/heartbeat": { "post": op("The sandbox is alive: the lease is renewed once half of it is gone", "hostKeyOrCapabilityToken", None, ok("200", "Heartbeat", "Recorded")) },
            "/v1/host/policy": {
                "get": op("The host's lifecycle policy (scope: read)", "hostKey", None, ok("200", "Policy", "The policy")),
                "put": op("Set the host's lifecycle policy, for events received from now on (scope: sessions)", "hostKey", Some("Policy"), ok("200", "Policy", "Set")),
            },
            "/v1/sessions/{id}/lifecycle": { "post": op("The host reports its sandbox's state (providers without a bridge, such as Modal) (scope: sessions)", "hostKey", Some("LifecycleRequest"), ok("200", "LifecycleReceived", "Recorded and acted on")) },
            "/v1/hosts/{host_id}/providers/{provider}/webhook": { "post": {
                "summary": "A sandbox provider's signed lifecycle webhook (e2b, daytona, vercel), verified on the raw body with the host's secret for it",
                "security": [{ "none": [] }],
                "parameters": [{ "name": "provider", "in": "path", "required": true, "schema": { "enum": ["e2b", "daytona", "vercel"] } }],
                "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "object", "description": "The provider's own payload (at most 64 KiB)." } } } },
                "responses": merge(ok("200", "LifecycleReceived", "Verified, recorded and acted on (or a duplicate, or an event not about a sandbox)"), json!({
                    "400": { "description": "Signed but not the provider's format (`malformed_payload`).", "content": { "application/json": { "schema": r("Error") } } },
                    "401": { "description": "`bad_signature`, `stale_delivery`, `missing_signature_header` or `provider_not_configured`: nothing changed.", "content": { "application/json": { "schema": r("Error") } } },
                    "404": { "description": "Not a provider with webhooks.", "content": { "application/json": { "schema": r("Error") } } },
                    "413": { "description": "Body over 64 KiB (`body_too_large`).", "content": { "application/json": { "schema": r("Error") } } } })) } },
            "/v1/sessions/{id}/pending/{pending_id}/decision": {
                "get": { "parameters": [{ "name": "approve", "in": "query", "required": true, "schema": { "type": "boolean" } }],
                    "summary": "Typed data for the owner's decision on a pending payment (scope: sessions)", "security": [{ "hostKey": [] }],
                    "responses": ok("200", "DecisionToSign", "To sign") },
                "post": op("Send the owner's signed decision through the gateway (scope: sessions)", "hostKey", Some("DecisionRequest"), ok("202", "Decided", "Decision queued")),
            },
    })
}

fn paths_payments() -> Value {
    let wait = json!({ "name": "wait", "in": "query", "schema": { "type": "integer", "maximum": 60 },
        "description": "Seconds to wait for a settled status before answering." });
    json!({
            "/v1/payments": {
                "post": op("Pay from the session: checked by the contracts' rules now, then queued", "capabilityToken", Some("PayRequest"), ok("202", "Payment", "Accepted and durably queued")),
                "get": { "parameters": [{ "name": "limit", "in": "query", "schema": { "type": "integer" } }],
                    "summary": "The session's payments, newest first", "security": [{ "capabilityToken": [] }],
                    "responses": ok("200", "PaymentList", "Payments") },
            },
            "/v1/payments/{id}": { "get": { "parameters": [wait, { "name": "until", "in": "query",
                    "schema": { "type": "string" }, "description": "With wait: the statuses to wait for, comma-separated (default: the settled ones)." }],
                "summary": "A payment and its status (the sandbox, or its host with scope read)", "security": [{ "hostKeyOrCapabilityToken": [] }],
                "responses": ok("200", "Payment", "The payment") } },
            "/v1/provenance": { "post": op("Record provenance signed by the session key", "capabilityToken", Some("ProvenanceRequest"), ok("202", "Provenance", "Accepted and queued")) },
            "/v1/provenance/{id}": { "get": { "parameters": [wait],
                "summary": "A provenance record and its status", "security": [{ "capabilityToken": [] }],
                "responses": ok("200", "Provenance", "The record") } },
            "/x402/supported": { "get": { "summary": "x402 v2 facilitator: the kinds it settles (bursar-session and exact on this chain)", "security": [{ "none": [] }],
                "responses": { "200": { "description": "{kinds, extensions, signers}", "content": { "application/json": { "schema": { "type": "object" } } } } } } },
            "/x402/verify": { "post": op("x402 v2 facilitator: verify a bursar-session payment (signature and every session rule) or an exact one from any payer (EIP-3009 or ERC-7710), simulated now", "none", Some("X402Request"),
                json!({ "200": { "description": "{isValid, invalidReason?, invalidMessage?, payer?}", "content": { "application/json": { "schema": { "type": "object" } } } } })) },
            "/x402/settle": { "post": op("x402 v2 facilitator: settle it through the transaction engine, answered once mined", "none", Some("X402Request"),
                json!({ "200": { "description": "{success, errorReason?, errorMessage?, payer?, transaction, network}", "content": { "application/json": { "schema": { "type": "object" } } } } })) },
            "/v1/x402/pay": { "post": op("Pay a 402 answer's PAYMENT-REQUIRED from the session by the cheapest option it offers, checked by the wallet's rules first: a signed bursar-session payment, an exact ERC-7710 delegation, or an exact EIP-3009 authorization the wallet reserved (answered once the reservation is mined)", "capabilityToken", Some("X402PayRequest"),
                json!({ "200": { "description": "{paymentSignature (the PAYMENT-SIGNATURE header), paymentPayload}", "content": { "application/json": { "schema": { "type": "object" } } } } })) },
            "/v1/webhooks": {
                "post": op("Add an outbound webhook endpoint; its URL must reach public addresses (scope: webhooks)", "hostKey", Some("WebhookRequest"), ok("201", "Webhook", "Added; the secret is shown once")),
                "get": op("The host's webhook endpoints (scope: webhooks)", "hostKey", None, ok("200", "WebhookList", "Endpoints")),
            },
            "/v1/webhooks/{id}": { "delete": op("Delete an endpoint (scope: webhooks)", "hostKey", None, json!({ "204": { "description": "Deleted" } })) },
            "/v1/webhooks/{id}/deliveries": { "get": { "parameters": [{ "name": "status", "in": "query", "schema": { "enum": ["pending", "delivered", "dead"] } }],
                "summary": "An endpoint's deliveries, newest first (scope: webhooks)", "security": [{ "hostKey": [] }],
                "responses": ok("200", "DeliveryList", "Deliveries") } },
            "/v1/webhooks/{id}/deliveries/{message_id}/replay": { "post": op("Deliver a message again (scope: webhooks)", "hostKey", None, json!({ "202": { "description": "Queued" } })) },
    })
}
