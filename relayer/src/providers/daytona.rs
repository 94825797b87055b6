//! Daytona's webhooks, delivered by Svix (enabled per organization; the endpoint is set in
//! Daytona's dashboard, which opens Svix's app portal, and its `whsec_` signing secret is the
//! host's secret here).
//!
//! Each delivery carries `svix-id` (the message: retries keep it, and deliveries are
//! deduplicated on it), `svix-timestamp` (unix seconds, within [`super::TOLERANCE`]) and
//! `svix-signature`: space-separated `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` under the
//! base64-decoded secret — the Standard Webhooks scheme of Bursar's own outbound webhooks,
//! verified by [`crate::kernel::signing::verify`].
//!
//! Payloads are flat: `{event, timestamp, id, organizationId, …}`; `sandbox.created` adds
//! `state`, `class` and `createdAt`, `sandbox.state.updated` `oldState`, `newState` and
//! `updatedAt`. Labels set on the sandbox are not in them. Snapshot and volume events are
//! verified and otherwise ignored.

use http::HeaderMap;
use serde_json::Value;

use super::{header, unix_seconds, within_limit, Lifecycle, ProviderError, Report, TOLERANCE};
use crate::kernel::signing::VerifyError;

/// The message id header.
pub const ID: &str = "svix-id";
/// The timestamp header.
pub const TIMESTAMP: &str = "svix-timestamp";
/// The signatures header.
pub const SIGNATURE: &str = "svix-signature";

/// Verifies a delivery (`headers`, raw `body`) under the host's `whsec_` `secret` at unix time
/// `now`, then reads it: `None` for a verified event that is not about a sandbox.
///
/// # Errors
/// [`ProviderError::TooLarge`], [`ProviderError::MissingHeader`], [`ProviderError::BadSecret`],
/// [`ProviderError::Stale`] and [`ProviderError::BadSignature`] before the body is parsed; then
/// [`ProviderError::Malformed`].
pub fn verify(
    secret: &str,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<Option<Report>, ProviderError> {
    within_limit(body)?;
    let (id, timestamp) = (header(headers, ID)?, header(headers, TIMESTAMP)?);
    let signatures = header(headers, SIGNATURE)?;
    crate::kernel::signing::verify(secret, id, timestamp, signatures, body, now, TOLERANCE)
        .map_err(|e| match e {
            VerifyError::BadSecret => ProviderError::BadSecret,
            VerifyError::Stale => ProviderError::Stale,
            VerifyError::Mismatch => ProviderError::BadSignature,
        })?;
    let v: Value =
        serde_json::from_slice(body).map_err(|e| ProviderError::Malformed(e.to_string()))?;
    let text = |name: &str| {
        v.get(name)
            .and_then(Value::as_str)
            .ok_or_else(|| ProviderError::Malformed(format!("no {name}")))
    };
    let event = text("event")?;
    let (kind, lifecycle) = match event {
        "sandbox.created" => (event.to_owned(), Lifecycle::Created),
        "sandbox.state.updated" => {
            let (old, new) = (text("oldState")?, text("newState")?);
            (format!("{event}: {old} -> {new}"), state(new))
        }
        _ => return Ok(None),
    };
    let at = match v.get("timestamp").and_then(Value::as_str) {
        Some(t) => unix_seconds(t)?,
        None => timestamp.parse().map_err(|_| ProviderError::Stale)?,
    };
    Ok(Some(Report {
        event_id: id.to_owned(),
        sandbox_id: text("id")?.to_owned(),
        kind,
        lifecycle,
        at,
        metadata: Default::default(),
        usage: None,
    }))
}

/// What a sandbox's new Daytona state means for the session. Started covers a resumed sandbox
/// too (`stopped -> starting -> started`): either way its lease is renewed.
fn state(state: &str) -> Lifecycle {
    match state {
        "started" => Lifecycle::Running,
        // Stopped or archived sandboxes can be started again.
        "stopping" | "stopped" | "archiving" | "archived" => Lifecycle::Paused,
        "destroying" | "destroyed" | "error" | "build_failed" => Lifecycle::Terminated,
        // creating, starting, restoring, snapshotting, forking, pulling_snapshot, …
        _ => Lifecycle::Other,
    }
}
