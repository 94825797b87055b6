//! The OpenAPI 3.1 document served at `/openapi.json`. A test asks every documented path of a
//! running indexer, so a route cannot be documented without existing.

use serde_json::{json, Value};

fn query(name: &str, description: &str) -> Value {
    json!({ "name": name, "in": "query", "required": false, "schema": { "type": "string" }, "description": description })
}

/// How a session id is written.
const SESSION_ID: &str = "A session id: 0x and 64 hex digits (as answered), or decimal.";

fn path_id(description: &str) -> Value {
    json!({ "name": "id", "in": "path", "required": true, "schema": { "type": "string" }, "description": description })
}

fn get(summary: &str, parameters: Vec<Value>, schema: &str) -> Value {
    json!({ "get": {
        "summary": summary,
        "parameters": parameters,
        "responses": {
            "200": { "description": "OK", "content": { "application/json": { "schema": { "$ref": format!("#/components/schemas/{schema}") } } } },
            "400": { "description": "A bad query parameter (`invalid_parameter`, named in `details.parameter`).", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
            "404": { "description": "Nothing with this id.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
            "503": { "description": "The database or the node is unavailable; retry.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
        },
    }})
}

/// The point in the chain an answer is as of.
fn as_of() -> Vec<Value> {
    vec![
        query(
            "asOfBlock",
            "As of this block (default: the last block indexed).",
        ),
        query(
            "asOfTime",
            "As of this unix time: the last block at or before it.",
        ),
    ]
}

fn paging() -> Vec<Value> {
    let mut parameters = as_of();
    parameters.extend([
        query("fromBlock", "From this block on."),
        query("toBlock", "Up to this block."),
        query("fromTime", "From this block time on (unix seconds)."),
        query("toTime", "Up to this block time (unix seconds)."),
        query(
            "includeOrphaned",
            "`true`: rows a reorg orphaned too (with `orphanedBy`).",
        ),
        query("cursor", "`nextCursor` of the previous page."),
        query("limit", "1 to 1000 (default 100)."),
    ]);
    parameters
}

fn with(mut first: Vec<Value>, rest: Vec<Value>) -> Vec<Value> {
    first.extend(rest);
    first
}

/// The document.
pub fn document() -> Value {
    let object = json!({ "type": "object" });
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Bursar indexer",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Every event of the Bursar contracts, reorg-safe, for audits. Amounts and ids are decimal strings in base units, session ids `0x` and 64 lowercase hex digits (as the relayer writes them; either that or decimal is accepted), addresses EIP-55; every event carries its chain fields (block number, hash and time, transaction hash, log index), its `finality` (`latest`, `safe` or `finalized`, by the node's block tags) and `canonical`; answers are as of the last block indexed unless `asOfBlock` or `asOfTime` says otherwise; parameter names may also be written snake_case (`as_of_block`); errors are `{code, message, details}`.",
        },
        "paths": {
            "/health": get("Chain id, last block indexed, head lag, the node's safe and finalized blocks, and `exportSigner`: the address (EIP-55) whose key signs audit exports (pin it with `bursar audit verify --signer` or `--indexer`).", vec![], "Health"),
            "/metrics": { "get": { "summary": "Prometheus metrics (text).", "responses": { "200": { "description": "OK", "content": { "text/plain": {} } } } } },
            "/openapi.json": get("This document.", vec![], "Object"),
            "/v1/events": get("Logs in chain order, decoded.", with(vec![
                query("session", SESSION_ID),
                query("event", "An event name (`PaymentExecuted`)."),
            ], paging()), "Events"),
            "/v1/sessions": get("Sessions in the order they opened, with their terms.", with(vec![
                query("owner", "An address."), query("sessionKey", "An address."), query("token", "An address."),
                query("metadata", "0x + 64 hex, as opened."), query("status", "`active`, `revoked` or `closed`."),
                query("openedFrom", "Opened at or after this unix time."), query("openedTo", "Opened at or before this unix time."),
            ], paging()), "Sessions"),
            "/v1/sessions/{id}": get("A session's terms and state by the wallet's rules.", with(vec![path_id(SESSION_ID)], as_of()), "Session"),
            "/v1/sessions/{id}/timeline": get("Every event of the session, in order (receipts, provenance, acknowledgements and revocations included).", with(vec![path_id(SESSION_ID)], paging()), "Events"),
            "/v1/sessions/{id}/export": { "get": {
                "summary": "The session's timeline as a signed, hash-chained audit export: NDJSON rows with prevHash and hash, then a line `{\"manifest\": Manifest}` (CSV: the same columns, the manifest on a last `# ` line). `bursar audit verify` re-checks it against a node: the rows must be exactly the chain's logs for the session at the manifest's contracts.",
                "parameters": with(vec![path_id(SESSION_ID), query("format", "`ndjson` (default) or `csv`.")], as_of()),
                "responses": { "200": { "description": "OK", "content": { "application/x-ndjson": {}, "text/csv": {} } } },
            } },
            "/v1/spend": get("Executed payments summed.", with(vec![
                query("groupBy", "Comma-separated: session, owner, counterparty, token, hour, day."),
                query("session", SESSION_ID), query("owner", "An address."),
                query("counterparty", "An address."), query("token", "An address."),
                query("fromBlock", "From this block on."), query("toBlock", "Up to this block."),
                query("fromTime", "From this block time on (unix seconds)."), query("toTime", "Up to this block time."),
                query("includeOrphaned", "`true`: orphaned payments counted too."),
            ], as_of()), "Spend"),
            "/v1/receipts": get("Receipts in the order they were recorded, with their acknowledgements.", with(vec![
                query("payer", "An address."), query("payee", "An address."), query("session", SESSION_ID),
                query("purpose", "0x + 64 hex."), query("acknowledged", "`true` or `false`."),
            ], paging()), "Receipts"),
            "/v1/receipts/{id}": get("A receipt and its acknowledgement.", with(vec![path_id("The receipt id.")], as_of()), "Object"),
            "/v1/provenance": get("Provenance records with their validity.", with(vec![
                query("subject", "0x + 64 hex."), query("attester", "An address."), query("session", SESSION_ID),
            ], paging()), "Records"),
            "/v1/provenance/{id}": get("A record, its revocation and `valid`.", with(vec![path_id("The record id.")], as_of()), "Object"),
            "/v1/provenance/{id}/lineage": get("Ancestors and descendants; `lineageValid` is false when the record or an ancestor is revoked.", with(vec![
                path_id("The record id."), query("depth", "Generations each way, 1 to 64 (default 8)."),
            ], as_of()), "Object"),
        },
        "components": { "schemas": {
            "Object": object,
            "Health": { "type": "object", "properties": {
                "status": { "type": "string" }, "chainId": { "type": "integer" },
                "headBlock": { "type": "integer" }, "headLag": { "type": "integer" },
                "indexedBlock": { "type": ["integer", "null"] }, "indexedBlockHash": { "type": ["string", "null"] },
                "safeBlock": { "type": ["integer", "null"] }, "finalizedBlock": { "type": ["integer", "null"] },
                "exportSigner": { "type": "string", "description": "The address whose key signs audit exports' manifests." } } },
            "Manifest": { "type": "object", "description": "An export's last line. `signature` is EIP-191 personal_sign, by `signer`, of the 32-byte keccak256 of this object's JSON exactly as the line carries it without its `signature` field.", "properties": {
                "sessionId": { "type": "string" }, "chainId": { "type": "integer" }, "rows": { "type": "integer" },
                "fromBlock": { "type": "integer", "description": "The session's opening block." },
                "toBlock": { "type": "integer", "description": "The last block indexed when exported: the rows are complete up to it." },
                "headBlockHash": { "type": "string" }, "lastHash": { "type": "string", "description": "The last row's hash." },
                "deployBlock": { "type": "integer", "description": "The first block the indexer follows." },
                "contracts": { "type": "object", "description": "The contracts followed, name → address (EIP-55): SessionWallet, SessionGateway, CounterpartyRegistry, ReceiptRegistry.", "additionalProperties": { "type": "string" } },
                "signer": { "type": "string", "description": "The indexer's export address (EIP-55), as /health's exportSigner." },
                "signature": { "type": "string", "description": "r ‖ s ‖ v, 65 bytes hex (v = 27 or 28)." } } },
            "Error": { "type": "object", "required": ["code", "message", "details"], "properties": {
                "code": { "type": "string" }, "message": { "type": "string" }, "details": { "type": "object" } } },
            "Events": { "type": "object", "properties": { "events": { "type": "array", "items": { "type": "object" } }, "nextCursor": { "type": ["string", "null"] } } },
            "Sessions": { "type": "object", "properties": { "sessions": { "type": "array", "items": { "type": "object" } }, "nextCursor": { "type": ["string", "null"] } } },
            "Session": { "type": "object", "properties": {
                "sessionId": { "type": "string" }, "terms": { "type": "object" },
                "status": { "enum": ["active", "revoked", "closed"] }, "deposit": { "type": "string" },
                "spent": { "type": "string" }, "reserved": { "type": "string" }, "remainingDeposit": { "type": "string" },
                "refunded": { "type": ["string", "null"] }, "period": { "type": ["object", "null"] },
                "leaseExpiresAt": { "type": ["integer", "null"] }, "pending": { "type": "array" },
                "reservations": { "type": "array", "description": "EIP-3009 authorizations reserved for third parties to settle (x402 `exact`): digest, amount (counted as spent once, when reserved), validBefore, receiptId, nonce, settledIn (the transaction that used it), status (`settled`: a third party used it; `released`: unused, given back; `reserved`: usable until validBefore; `expired`: unused in its window, anyone may release it).", "items": { "type": "object" } },
                "asOf": { "type": "object" } } },
            "Spend": { "type": "object", "properties": { "groupBy": { "type": "array" }, "groups": { "type": "array", "items": { "type": "object" } } } },
            "Receipts": { "type": "object", "properties": { "receipts": { "type": "array", "items": { "type": "object" } }, "nextCursor": { "type": ["string", "null"] } } },
            "Records": { "type": "object", "properties": { "records": { "type": "array", "items": { "type": "object" } }, "nextCursor": { "type": ["string", "null"] } } },
        } },
    })
}
