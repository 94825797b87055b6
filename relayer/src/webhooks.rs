//! Outbound webhooks to hosts, in the Standard Webhooks scheme: each message carries
//! `webhook-id`, `webhook-timestamp` and `webhook-signature: v1,<base64 HMAC-SHA256 of
//! "id.timestamp.body">` under the endpoint's `whsec_` secret. Deliveries are at least once:
//! retried with doubling waits, dead-lettered after [`crate::Settings::webhook_attempts`]
//! failures, replayable; a re-emitted event keeps its message id, so receivers deduplicate on
//! `webhook-id`.
//!
//! Events: `session.opened`, `session.failed`, `session.revoked`, `session.closed`,
//! `session.sandbox` (a lifecycle event of the session's sandbox and what it did),
//! `payment.updated` (every settled payment status), `provenance.updated`.

use std::time::Duration;

use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::hosts::Host;
use crate::store::{now_ms, DbTx, DeliveryRow, EndpointRow, Store, StoreError};
use crate::{random_bytes, Core};

/// Every event type.
pub const EVENTS: [&str; 7] = [
    "session.opened",
    "session.failed",
    "session.revoked",
    "session.closed",
    "session.sandbox",
    "payment.updated",
    "provenance.updated",
];

/// The longest a receiver is given to answer.
const TIMEOUT: Duration = Duration::from_secs(10);

/// `POST /v1/webhooks`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateRequest {
    /// Where to deliver (http or https).
    pub url: String,
    /// Which events (default: all).
    pub events: Option<Vec<String>>,
}

/// An endpoint as the API shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointView {
    /// `wh_…`.
    pub id: String,
    /// Where deliveries go.
    pub url: String,
    /// Which events it takes (`*`: all).
    pub events: Vec<String>,
    /// The signing secret (`whsec_…`): only in the answer to its creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// When it was made (unix ms).
    pub created_at: i64,
}

impl EndpointView {
    fn of(e: EndpointRow, secret: Option<String>) -> Self {
        EndpointView {
            id: e.id,
            url: e.url,
            events: e.events.split(' ').map(str::to_owned).collect(),
            secret,
            created_at: e.created_at,
        }
    }
}

/// A delivery as the API shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryView {
    /// `webhook-id`.
    pub message_id: String,
    /// The event.
    pub event_type: String,
    /// `pending`, `delivered` or `dead`.
    pub status: String,
    /// Attempts made.
    pub attempts: i64,
    /// The receiver's last HTTP status.
    pub last_status: Option<i64>,
    /// The last transport error.
    pub last_error: Option<String>,
    /// The body.
    pub payload: Value,
    /// When it was emitted (unix ms).
    pub created_at: i64,
}

impl From<DeliveryRow> for DeliveryView {
    fn from(d: DeliveryRow) -> Self {
        DeliveryView {
            payload: serde_json::from_str(&d.payload).unwrap_or(Value::Null),
            message_id: d.message_id,
            event_type: d.event_type,
            status: d.status,
            attempts: d.attempts,
            last_status: d.last_status,
            last_error: d.last_error,
            created_at: d.created_at,
        }
    }
}

/// Adds an endpoint for `host`; the answer holds its secret, shown this once.
pub async fn create(
    core: &Core,
    host: &Host,
    req: CreateRequest,
) -> Result<EndpointView, ApiError> {
    let url = crate::egress::check_url(&req.url, core.settings.webhook_egress)
        .await
        .map_err(|e| ApiError::invalid("url", e.to_string()))?;
    let events = match req.events {
        None => "*".to_owned(),
        Some(list) if list.is_empty() => {
            return Err(ApiError::invalid(
                "events",
                "events must name at least one event",
            ))
        }
        Some(list) => {
            if let Some(bad) = list.iter().find(|e| !EVENTS.contains(&e.as_str())) {
                return Err(ApiError::invalid(
                    "events",
                    format!("unknown event {bad:?} (events: {})", EVENTS.join(", ")),
                ));
            }
            list.join(" ")
        }
    };
    let id = format!("wh_{}", alloy_primitives::hex::encode(random_bytes::<12>()));
    let secret: [u8; 32] = random_bytes();
    let row = EndpointRow {
        sealed_secret: core.master_key.seal(&id, &secret),
        master_key_id: core.master_key.id(),
        id,
        host_id: host.id.clone(),
        url: url.to_string(),
        events,
        created_at: now_ms(),
        disabled_at: None,
    };
    core.store.insert_endpoint(&row).await?;
    tracing::info!(host = %host.id, endpoint = %row.id, "webhook endpoint added");
    let secret = format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(secret)
    );
    Ok(EndpointView::of(row, Some(secret)))
}

/// `host`'s endpoints (without secrets).
pub async fn list(core: &Core, host: &Host) -> Result<Vec<EndpointView>, ApiError> {
    let rows = core.store.endpoints(&host.id).await?;
    Ok(rows
        .into_iter()
        .map(|e| EndpointView::of(e, None))
        .collect())
}

/// Deletes `host`'s endpoint `id` (its pending deliveries stop).
pub async fn delete(core: &Core, host: &Host, id: &str) -> Result<(), ApiError> {
    if core.store.disable_endpoint(&host.id, id, now_ms()).await? {
        Ok(())
    } else {
        Err(ApiError::NotFound)
    }
}

async fn host_endpoint(core: &Core, host: &Host, id: &str) -> Result<EndpointRow, ApiError> {
    core.store
        .endpoint(id)
        .await?
        .filter(|e| e.host_id == host.id)
        .ok_or(ApiError::NotFound)
}

/// An endpoint's deliveries, newest first (`status`: pending, delivered or dead).
pub async fn deliveries(
    core: &Core,
    host: &Host,
    id: &str,
    status: Option<&str>,
) -> Result<Vec<DeliveryView>, ApiError> {
    let endpoint = host_endpoint(core, host, id).await?;
    let rows = core.store.deliveries(&endpoint.id, status, 500).await?;
    Ok(rows.into_iter().map(DeliveryView::from).collect())
}

/// Sends a delivery again (a dead letter, or a delivered message the host lost).
pub async fn replay(core: &Core, host: &Host, id: &str, message_id: &str) -> Result<(), ApiError> {
    let endpoint = host_endpoint(core, host, id).await?;
    if !core
        .store
        .replay_delivery(&endpoint.id, message_id, now_ms())
        .await?
    {
        return Err(ApiError::NotFound);
    }
    core.webhooks_due.notify_one();
    Ok(())
}

/// Emits event `event_type` about `subject` (a payment, a session…) to `host_id`'s endpoints.
/// The message id is derived from the subject and `state`, so emitting the same change twice
/// (after a crash) delivers one message id.
pub async fn emit(
    core: &Core,
    host_id: &str,
    event_type: &str,
    subject: &str,
    state: &str,
    data: Value,
) -> Result<(), StoreError> {
    let (message_id, payload) = message(event_type, subject, state, data);
    let n = core
        .store
        .emit(host_id, &message_id, event_type, &payload, now_ms())
        .await?;
    if n > 0 {
        core.webhooks_due.notify_one();
    }
    Ok(())
}

/// [`emit`] inside `db`, for changes recorded in the same transaction: the message is queued if
/// and only if they are (wake the deliverer, [`Core::webhooks_due`], after committing).
pub async fn emit_in(
    db: &mut DbTx,
    host_id: &str,
    event_type: &str,
    subject: &str,
    state: &str,
    data: Value,
) -> Result<(), StoreError> {
    let (message_id, payload) = message(event_type, subject, state, data);
    Store::emit_in(db, host_id, &message_id, event_type, &payload, now_ms()).await?;
    Ok(())
}

/// A message's id (from the subject and state) and payload.
fn message(event_type: &str, subject: &str, state: &str, data: Value) -> (String, String) {
    let digest = Sha256::digest(format!("{event_type}\0{subject}\0{state}"));
    let message_id = format!("msg_{}", alloy_primitives::hex::encode(&digest[..16]));
    let payload = json!({
        "type": event_type,
        "timestamp": now_ms() / 1000,
        "data": data,
    })
    .to_string();
    (message_id, payload)
}

/// Delivers what is due until `stop` resolves.
pub async fn run(core: &Core, stop: impl std::future::Future<Output = ()>) {
    tokio::pin!(stop);
    let http = crate::egress::client(core.settings.webhook_egress, TIMEOUT);
    loop {
        match deliver_due(core, &http).await {
            Ok(0) => {}
            Ok(_) => {
                core.settled.send_modify(|n| *n += 1);
            }
            Err(e) => tracing::warn!(error = %e, "webhook deliveries failed; retrying"),
        }
        tokio::select! {
            _ = &mut stop => return,
            _ = core.webhooks_due.notified() => {}
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

/// One pass over the due deliveries (several at once); returns how many were attempted.
pub async fn deliver_due(core: &Core, http: &reqwest::Client) -> Result<usize, StoreError> {
    let due = core.store.due_deliveries(now_ms(), 32).await?;
    let attempts = due.iter().map(|d| attempt(core, http, d));
    let results = futures_util::future::join_all(attempts).await;
    for r in &results {
        if let Err(e) = r {
            tracing::warn!(error = %e, "recording a webhook attempt failed");
        }
    }
    Ok(due.len())
}

async fn attempt(core: &Core, http: &reqwest::Client, d: &DeliveryRow) -> Result<(), StoreError> {
    let Some(endpoint) = core.store.endpoint(&d.endpoint_id).await? else {
        return Ok(());
    };
    if endpoint.disabled_at.is_some() {
        return core
            .store
            .record_attempt(
                &d.endpoint_id,
                &d.message_id,
                "dead",
                i64::MAX,
                None,
                Some("endpoint deleted"),
                now_ms(),
            )
            .await;
    }
    let secret = match core
        .master_key
        .open_sealed(&endpoint.id, &endpoint.sealed_secret)
    {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(endpoint = %endpoint.id, error = %e, "webhook secret does not open");
            return Ok(());
        }
    };
    let timestamp = now_ms() / 1000;
    let signature = sign(&secret, &d.message_id, timestamp, d.payload.as_bytes());
    // Again at each delivery: the policy may have changed since, and a literal address never
    // reaches the client's resolver (which checks names as they resolve now).
    if let Err(e) = crate::egress::check_literal(&endpoint.url, core.settings.webhook_egress) {
        return record(core, d, endpoint.id.as_str(), None, Some(e.to_string())).await;
    }
    let sent = http
        .post(&endpoint.url)
        .header("content-type", "application/json")
        .header("webhook-id", &d.message_id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .body(d.payload.clone())
        .send()
        .await;
    let (http_status, error) = match &sent {
        Ok(r) => (Some(i64::from(r.status().as_u16())), None),
        // The URL is the host's own; the error text names no secret. With its causes: a
        // refusal by the resolver is a cause, not the message.
        Err(e) => (None, Some(bursar_client::rpc::error_chain(e))),
    };
    record(core, d, &endpoint.id, http_status, error).await
}

/// Records an attempt of `d` that got `http_status` or failed with `error`: delivered on a
/// 2xx, else retried later or dead-lettered.
async fn record(
    core: &Core,
    d: &DeliveryRow,
    endpoint: &str,
    http_status: Option<i64>,
    error: Option<String>,
) -> Result<(), StoreError> {
    let delivered = http_status.is_some_and(|s| (200..300).contains(&s));
    let attempts = d.attempts + 1;
    let (status, next) = if delivered {
        ("delivered", i64::MAX)
    } else if attempts >= i64::from(core.settings.webhook_attempts) {
        tracing::warn!(%endpoint, message = %d.message_id, "webhook dead-lettered");
        ("dead", i64::MAX)
    } else {
        let base = core.settings.webhook_backoff.as_millis() as i64;
        let wait = base.saturating_mul(1i64 << attempts.min(20)).min(3_600_000);
        ("pending", now_ms() + wait)
    };
    core.store
        .record_attempt(
            &d.endpoint_id,
            &d.message_id,
            status,
            next,
            http_status,
            error.as_deref(),
            now_ms(),
        )
        .await
}

/// `v1,<base64 HMAC-SHA256(secret, "id.timestamp.body")>`: the `webhook-signature` header.
pub fn sign(secret: &[u8], message_id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(format!("{message_id}.{timestamp}.").as_bytes());
    mac.update(body);
    let tag = mac.finalize().into_bytes();
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(tag)
    )
}

/// Why a received webhook is refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The secret is not `whsec_<base64>`.
    #[error("the secret is not whsec_<base64>")]
    BadSecret,
    /// The timestamp is missing, malformed or outside the tolerance.
    #[error("stale or missing timestamp")]
    Stale,
    /// No signature in the header matches.
    #[error("no signature matches")]
    Mismatch,
}

/// What a receiver does with a delivery: checks the timestamp is within `tolerance` of `now`
/// (unix seconds) and that one of the header's signatures (space-separated) matches, in
/// constant time. For hosts' Rust receivers and the tests.
pub fn verify(
    secret: &str,
    message_id: &str,
    timestamp: &str,
    signatures: &str,
    body: &[u8],
    now: i64,
    tolerance: Duration,
) -> Result<(), VerifyError> {
    let key = secret
        .strip_prefix("whsec_")
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .ok_or(VerifyError::BadSecret)?;
    let ts: i64 = timestamp.parse().map_err(|_| VerifyError::Stale)?;
    if ts.abs_diff(now) > tolerance.as_secs() {
        return Err(VerifyError::Stale);
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("HMAC takes any key length");
    mac.update(format!("{message_id}.{timestamp}.").as_bytes());
    mac.update(body);
    for candidate in signatures.split(' ') {
        let Some(tag) = candidate
            .strip_prefix("v1,")
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        else {
            continue;
        };
        if mac.clone().verify_slice(&tag).is_ok() {
            return Ok(());
        }
    }
    Err(VerifyError::Mismatch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_verify_and_tampering_or_staleness_is_refused() {
        // The Standard Webhooks specification's example.
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let key = base64::engine::general_purpose::STANDARD
            .decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
            .unwrap();
        let id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
        let body = br#"{"test": 2432232314}"#;
        let sig = sign(&key, id, 1614265330, body);
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        let tolerance = Duration::from_secs(300);
        assert_eq!(
            verify(secret, id, "1614265330", &sig, body, 1614265330, tolerance),
            Ok(())
        );
        // Several signatures in the header: any one matching is enough.
        let both = format!("v1,bm90IGl0 {sig}");
        assert_eq!(
            verify(secret, id, "1614265330", &both, body, 1614265400, tolerance),
            Ok(())
        );
        let tampered = br#"{"test": 2432232315}"#;
        assert_eq!(
            verify(
                secret,
                id,
                "1614265330",
                &sig,
                tampered,
                1614265330,
                tolerance
            ),
            Err(VerifyError::Mismatch)
        );
        assert_eq!(
            verify(
                secret,
                "msg_other",
                "1614265330",
                &sig,
                body,
                1614265330,
                tolerance
            ),
            Err(VerifyError::Mismatch)
        );
        assert_eq!(
            verify(
                secret,
                id,
                "1614265330",
                &sig,
                body,
                1614265330 + 301,
                tolerance
            ),
            Err(VerifyError::Stale)
        );
        assert_eq!(
            verify(
                "whsec_!!",
                id,
                "1614265330",
                &sig,
                body,
                1614265330,
                tolerance
            ),
            Err(VerifyError::BadSecret)
        );
    }
}
