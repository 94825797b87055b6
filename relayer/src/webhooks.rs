//! Outbound webhooks to hosts, in the Standard Webhooks scheme: each message carries
//! `webhook-id`, `webhook-timestamp` and `webhook-signature: v1,<base64 HMAC-SHA256 of
//! "id.timestamp.body">` under the endpoint's `whsec_` secret. Deliveries are at least once:
//! retried with doubling waits, dead-lettered after [`crate::Settings::webhook_attempts`]
//! failures, replayable; a re-emitted event keeps its message id, so receivers deduplicate on
//! `webhook-id`.
//!
//! Events: `session.opened`, `session.failed`, `session.revoked`, `session.closed`,
//! `session.sandbox` (a lifecycle event of the session's sandbox and what it did),
//! `payment.updated` (every settled payment status), `provenance.updated`, `feedback.updated`. Payloads are
//! `{type, timestamp, data}`, the timestamp in RFC 3339 as the specification has it.

use std::time::Duration;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::engine::random::random_bytes;
use crate::hosts::Host;
use crate::kernel::signing::sign;
use crate::kernel::{App, Error, PassError};
use crate::store::{now_ms, DbTx, DeliveryRow, EndpointRow, Store, StoreError};

/// Every event type.
pub const EVENTS: [&str; 8] = [
    "session.opened",
    "session.failed",
    "session.revoked",
    "session.closed",
    "session.sandbox",
    "payment.updated",
    "provenance.updated",
    "feedback.updated",
];

/// The longest a receiver is given to answer.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(10);

/// `POST /v1/webhooks`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = WebhookRequest)]
pub struct CreateRequest {
    /// Where to deliver (http or https, reaching public addresses only).
    pub url: String,
    /// Which events (default: all).
    pub events: Option<Vec<String>>,
}

/// An endpoint as the API shows it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Webhook)]
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
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Delivery)]
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
    #[schema(value_type = Object)]
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
pub async fn create(app: &App, host: &Host, req: CreateRequest) -> Result<EndpointView, Error> {
    let url = bursar_egress::check_url(&req.url, app.settings.webhook_egress)
        .await
        .map_err(|e| Error::invalid("url", e.to_string()))?;
    let events = match req.events {
        None => "*".to_owned(),
        Some(list) if list.is_empty() => {
            return Err(Error::invalid(
                "events",
                "events must name at least one event",
            ))
        }
        Some(list) => {
            if let Some(bad) = list.iter().find(|e| !EVENTS.contains(&e.as_str())) {
                return Err(Error::invalid(
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
        sealed_secret: app.custody.master_key.seal(&id, &secret),
        master_key_id: app.custody.master_key.id(),
        id,
        host_id: host.id.clone(),
        url: url.to_string(),
        events,
        created_at: now_ms(),
        disabled_at: None,
    };
    app.store.insert_endpoint(&row).await?;
    tracing::info!(host = %host.id, endpoint = %row.id, "webhook endpoint added");
    let secret = format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(secret)
    );
    Ok(EndpointView::of(row, Some(secret)))
}

/// `host`'s endpoints (without secrets).
pub async fn list(app: &App, host: &Host) -> Result<Vec<EndpointView>, Error> {
    let rows = app.store.endpoints(&host.id).await?;
    Ok(rows
        .into_iter()
        .map(|e| EndpointView::of(e, None))
        .collect())
}

/// Deletes `host`'s endpoint `id` (its pending deliveries stop).
pub async fn delete(app: &App, host: &Host, id: &str) -> Result<(), Error> {
    if app.store.disable_endpoint(&host.id, id, now_ms()).await? {
        Ok(())
    } else {
        Err(Error::NotFound)
    }
}

async fn host_endpoint(app: &App, host: &Host, id: &str) -> Result<EndpointRow, Error> {
    app.store
        .endpoint(id)
        .await?
        .filter(|e| e.host_id == host.id)
        .ok_or(Error::NotFound)
}

/// An endpoint's deliveries, newest first (`status`: pending, delivered or dead).
pub async fn deliveries(
    app: &App,
    host: &Host,
    id: &str,
    status: Option<&str>,
) -> Result<Vec<DeliveryView>, Error> {
    let endpoint = host_endpoint(app, host, id).await?;
    let rows = app.store.deliveries(&endpoint.id, status, 500).await?;
    Ok(rows.into_iter().map(DeliveryView::from).collect())
}

/// Sends a delivery again (a dead letter, or a delivered message the host lost).
pub async fn replay(app: &App, host: &Host, id: &str, message_id: &str) -> Result<(), Error> {
    let endpoint = host_endpoint(app, host, id).await?;
    if !app
        .store
        .replay_delivery(&endpoint.id, message_id, now_ms())
        .await?
    {
        return Err(Error::NotFound);
    }
    app.wakes.webhooks_due.notify_one();
    Ok(())
}

/// Emits event `event_type` about `subject` (a payment, a session…) to `host_id`'s endpoints.
/// The message id is derived from the subject and `state`, so emitting the same change twice
/// (after a crash) delivers one message id.
pub async fn emit(
    app: &App,
    host_id: &str,
    event_type: &str,
    subject: &str,
    state: &str,
    data: Value,
) -> Result<(), StoreError> {
    let (message_id, payload) = message(event_type, subject, state, data);
    let n = app
        .store
        .emit(host_id, &message_id, event_type, &payload, now_ms())
        .await?;
    if n > 0 {
        app.wakes.webhooks_due.notify_one();
    }
    Ok(())
}

/// [`emit`] inside `db`, for changes recorded in the same transaction: the message is queued if
/// and only if they are (wake the deliverer, [`App::webhooks_due`], after committing).
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
        "timestamp": rfc3339(now_ms()),
        "data": data,
    })
    .to_string();
    (message_id, payload)
}

/// Unix time `ms` (milliseconds) as the Standard Webhooks payload's `timestamp` has it:
/// RFC 3339 in UTC (`2026-12-04T18:58:25.123Z`).
fn rfc3339(ms: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

/// One pass over the due deliveries (several at once); returns how many were attempted.
pub async fn deliver_due(app: &App, http: &reqwest::Client) -> Result<usize, PassError> {
    let due = app.store.due_deliveries(now_ms(), 32).await?;
    let attempts = due.iter().map(|d| attempt(app, http, d));
    let results = futures_util::future::join_all(attempts).await;
    for r in &results {
        if let Err(e) = r {
            tracing::warn!(error = %e, "recording a webhook attempt failed");
        }
    }
    Ok(due.len())
}

async fn attempt(app: &App, http: &reqwest::Client, d: &DeliveryRow) -> Result<(), StoreError> {
    let Some(endpoint) = app.store.endpoint(&d.endpoint_id).await? else {
        return Ok(());
    };
    if endpoint.disabled_at.is_some() {
        return app
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
    let secret = match app
        .custody
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
    let signature = sign(&secret, &d.message_id, timestamp, &d.payload);
    // Again at each delivery: the policy may have changed since, and a literal address never
    // reaches the client's resolver (which checks names as they resolve now).
    if let Err(e) = bursar_egress::check_literal(&endpoint.url, app.settings.webhook_egress) {
        return record(app, d, endpoint.id.as_str(), None, Some(e.to_string())).await;
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
    record(app, d, &endpoint.id, http_status, error).await
}

/// Records an attempt of `d` that got `http_status` or failed with `error`: delivered on a
/// 2xx, else retried later or dead-lettered.
async fn record(
    app: &App,
    d: &DeliveryRow,
    endpoint: &str,
    http_status: Option<i64>,
    error: Option<String>,
) -> Result<(), StoreError> {
    let delivered = http_status.is_some_and(|s| (200..300).contains(&s));
    let attempts = d.attempts + 1;
    let (status, next) = if delivered {
        ("delivered", i64::MAX)
    } else if attempts >= i64::from(app.settings.webhook_attempts) {
        tracing::warn!(%endpoint, message = %d.message_id, "webhook dead-lettered");
        ("dead", i64::MAX)
    } else {
        let base = app.settings.webhook_backoff.as_millis() as i64;
        let wait = base.saturating_mul(1i64 << attempts.min(20)).min(3_600_000);
        ("pending", now_ms() + wait)
    };
    app.store
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_times_are_rfc3339_in_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_796_418_905_123), "2026-12-04T21:15:05.123Z");
        let (_, payload) = message("payment.updated", "pay_1", "confirmed", json!({}));
        let payload: Value = serde_json::from_str(&payload).unwrap();
        let written = payload["timestamp"].as_str().unwrap();
        let read =
            time::OffsetDateTime::parse(written, &time::format_description::well_known::Rfc3339)
                .unwrap();
        assert!(
            (read.unix_timestamp() * 1000).abs_diff(now_ms()) < 60_000,
            "{written}"
        );
    }
}
