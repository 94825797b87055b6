//! Vercel Sandbox's session lifecycle webhooks, delivered by Vercel's team webhooks (Settings →
//! Webhooks; events `sandbox.session.started`, `sandbox.session.expiring`,
//! `sandbox.session.stopped`; the webhook's secret is the host's secret here).
//!
//! Each delivery is signed in `x-vercel-signature`: hex HMAC-SHA1 of the raw body under the
//! secret. The body is Vercel's webhook envelope `{id, type, createdAt (unix ms), payload}`;
//! `payload.sandbox` and `payload.session` describe the sandbox and this run of it (a resume is a
//! new session). Stopped sessions carry `stopReason` (`requested`, `snapshot`, `timeout`,
//! `exited`, `error`), `duration` and `activeCpuDurationMs` (ms) and `networkTransfer`
//! (`ingress`, `egress`, bytes).
//!
//! Assumed where Vercel's pages do not say (see the README): the envelope is that of Vercel's
//! other webhooks, so `createdAt` is the delivery's time (checked within
//! [`super::TOLERANCE`]) and `id` the event's (deliveries are deduplicated on it); the sandbox is
//! named by `payload.sandbox.name`, else `payload.sandbox.id`; a session stopped for a snapshot
//! is a pause (the sandbox can resume), any other stop ends the sandbox's Bursar session.

use hmac::{Hmac, Mac};
use http::HeaderMap;
use serde_json::Value;
use sha1::Sha1;

use super::{fresh, header, within_limit, Lifecycle, ProviderError, Report, Usage};

/// The signature header.
pub const SIGNATURE: &str = "x-vercel-signature";

/// `x-vercel-signature` for `body` under `secret`: hex HMAC-SHA1.
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    let mut mac = Hmac::<Sha1>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(body);
    alloy_primitives::hex::encode(mac.finalize().into_bytes())
}

/// Verifies a delivery (`headers`, raw `body`) under the host's `secret` at unix time `now`,
/// then reads it: `None` for a verified event that is not about a sandbox session.
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
) -> Result<Option<Report>, ProviderError> {
    within_limit(body)?;
    let given = alloy_primitives::hex::decode(header(headers, SIGNATURE)?.trim())
        .map_err(|_| ProviderError::BadSignature)?;
    let mut mac = Hmac::<Sha1>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(body);
    // Constant time.
    mac.verify_slice(&given)
        .map_err(|_| ProviderError::BadSignature)?;
    let v: Value =
        serde_json::from_slice(body).map_err(|e| ProviderError::Malformed(e.to_string()))?;
    let malformed = |what: &str| ProviderError::Malformed(format!("no {what}"));
    let kind = v
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| malformed("type"))?;
    let created_ms = v
        .get("createdAt")
        .and_then(Value::as_i64)
        .ok_or_else(|| malformed("createdAt"))?;
    fresh(created_ms.div_euclid(1000), now)?;
    let Some(event) = kind.strip_prefix("sandbox.session.") else {
        return Ok(None);
    };
    let payload = v.get("payload").ok_or_else(|| malformed("payload"))?;
    let sandbox = payload
        .get("sandbox")
        .ok_or_else(|| malformed("payload.sandbox"))?;
    let sandbox_id = ["name", "id"]
        .iter()
        .find_map(|k| sandbox.get(*k).and_then(Value::as_str))
        .ok_or_else(|| malformed("payload.sandbox name or id"))?;
    let session = payload
        .get("session")
        .ok_or_else(|| malformed("payload.session"))?;
    let number = |v: &Value, name: &str| v.get(name).and_then(Value::as_u64);
    let (lifecycle, kind) = match event {
        "started" => (Lifecycle::Running, kind.to_owned()),
        "stopped" => {
            let reason = session
                .get("stopReason")
                .and_then(Value::as_str)
                .unwrap_or("unknown");
            let lifecycle = match reason {
                "snapshot" => Lifecycle::Paused,
                _ => Lifecycle::Terminated,
            };
            (lifecycle, format!("{kind}: {reason}"))
        }
        // `expiring`: a warning a minute before the timeout; the stop follows.
        _ => (Lifecycle::Other, kind.to_owned()),
    };
    let usage = (event == "stopped").then(|| {
        let transfer = session.get("networkTransfer");
        Usage {
            run: session.get("id").and_then(Value::as_str).map(str::to_owned),
            vcpus: number(session, "vcpus"),
            memory_mb: number(session, "memory"),
            runtime_ms: number(session, "duration"),
            active_cpu_ms: number(session, "activeCpuDurationMs"),
            ingress_bytes: transfer.and_then(|t| number(t, "ingress")),
            egress_bytes: transfer.and_then(|t| number(t, "egress")),
            ..Usage::default()
        }
    });
    Ok(Some(Report {
        event_id: v
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| malformed("id"))?
            .to_owned(),
        sandbox_id: sandbox_id.to_owned(),
        kind,
        lifecycle,
        at: created_ms.div_euclid(1000),
        metadata: Default::default(),
        usage,
    }))
}
