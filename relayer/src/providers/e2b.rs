//! E2B's sandbox lifecycle webhooks (registered with `POST https://api.e2b.app/events/webhooks`,
//! `signatureSecret` set to the host's secret).
//!
//! Each delivery carries `e2b-webhook-id` (the webhook), `e2b-delivery-id` (this attempt: it
//! changes on each retry), `e2b-signature-version` (`v1`) and `e2b-signature`: base64 of
//! SHA-256(secret ‖ raw body) with the `=` padding stripped — a plain hash, not an HMAC. E2B's
//! docs have shown it in the standard and in the URL-safe alphabet; both are accepted.
//!
//! Payload versions: v2 in snake_case (`sandbox_id`, `event_data`), v1 in camelCase
//! (`sandboxId`, `eventData`); both carry `sandbox_metadata` (the metadata set at creation) and,
//! on `killed` and `paused`, `execution` (`started_at`, `vcpu_count`, `memory_mb`,
//! `execution_time` — milliseconds in E2B's current docs, seconds in an earlier revision; read
//! as milliseconds). The payload's signed `timestamp` must be within [`super::TOLERANCE`], and
//! deliveries are deduplicated on its `id`, the event's, which retries keep.

use base64::Engine;
use http::HeaderMap;
use serde_json::Value;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::{fresh, header, unix_seconds, within_limit, Lifecycle, ProviderError, Report, Usage};

/// The signature header.
pub const SIGNATURE: &str = "e2b-signature";
/// The signature scheme's version header (absent means `v1`).
pub const SIGNATURE_VERSION: &str = "e2b-signature-version";

/// `e2b-signature` for `body` under `secret`: unpadded standard base64 of SHA-256(secret ‖
/// body).
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD_NO_PAD.encode(digest(secret, body))
}

fn digest(secret: &[u8], body: &[u8]) -> [u8; 32] {
    let mut hash = Sha256::new();
    hash.update(secret);
    hash.update(body);
    hash.finalize().into()
}

/// Verifies a delivery (`headers`, raw `body`) under the host's `secret` at unix time `now`,
/// then reads it.
///
/// # Errors
/// [`ProviderError::TooLarge`], [`ProviderError::MissingHeader`] and
/// [`ProviderError::BadSignature`] before the body is parsed; then
/// [`ProviderError::Malformed`] and [`ProviderError::Stale`].
pub fn verify(
    secret: &[u8],
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<Report, ProviderError> {
    within_limit(body)?;
    let signature = header(headers, SIGNATURE)?;
    if headers
        .get(SIGNATURE_VERSION)
        .is_some_and(|v| v.as_bytes() != b"v1")
    {
        return Err(ProviderError::BadSignature);
    }
    let expected = digest(secret, body);
    let signature = signature.trim().trim_end_matches('=');
    let matches = [
        base64::engine::general_purpose::STANDARD_NO_PAD,
        base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ]
    .iter()
    .filter_map(|alphabet| alphabet.decode(signature).ok())
    .any(|given| bool::from(given.ct_eq(&expected)));
    if !matches {
        return Err(ProviderError::BadSignature);
    }
    let report = parse(body)?;
    fresh(report.at, now)?;
    Ok(report)
}

/// Reads a v1 or v2 payload.
fn parse(body: &[u8]) -> Result<Report, ProviderError> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| ProviderError::Malformed(e.to_string()))?;
    // v2's snake_case name, else v1's camelCase one.
    let field = |snake: &str, camel: &str| v.get(snake).or_else(|| v.get(camel));
    let text = |value: Option<&Value>, name: &str| {
        value
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| ProviderError::Malformed(format!("no {name}")))
    };
    let kind = text(v.get("type"), "type")?;
    let data = field("event_data", "eventData");
    let metadata = super::string_map(data.and_then(|d| {
        d.get("sandbox_metadata")
            .or_else(|| d.get("sandboxMetadata"))
    }));
    let usage = data.and_then(|d| d.get("execution")).map(|e| {
        let number = |name: &str| {
            let n = e.get(name)?;
            n.as_u64()
                .or_else(|| n.as_f64().map(|f| f.max(0.0).round() as u64))
        };
        let started_at = e
            .get("started_at")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let execution = field("sandbox_execution_id", "sandboxExecutionId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        Usage {
            run: execution.or_else(|| started_at.clone()),
            started_at,
            vcpus: number("vcpu_count"),
            memory_mb: number("memory_mb"),
            runtime_ms: number("execution_time"),
            ..Usage::default()
        }
    });
    Ok(Report {
        event_id: text(v.get("id"), "id")?,
        sandbox_id: text(field("sandbox_id", "sandboxId"), "sandbox id")?,
        lifecycle: lifecycle(&kind),
        at: unix_seconds(&text(v.get("timestamp"), "timestamp")?)?,
        kind,
        metadata,
        usage,
    })
}

/// What an E2B event type means for the session.
fn lifecycle(kind: &str) -> Lifecycle {
    match kind.strip_prefix("sandbox.lifecycle.").unwrap_or(kind) {
        "created" => Lifecycle::Created,
        "paused" => Lifecycle::Paused,
        "resumed" => Lifecycle::Resumed,
        "killed" => Lifecycle::Terminated,
        // `updated` (a new timeout, say), `checkpointed` (a snapshot), and what E2B adds later.
        _ => Lifecycle::Other,
    }
}
