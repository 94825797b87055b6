//! Browserbase sessions, which send no webhooks: the relayer polls
//! `GET {base}/v1/sessions/{id}` with the host's API key (`X-BB-API-Key`).
//!
//! A session's `status` is `PENDING`, `RUNNING`, `ERROR`, `TIMED_OUT` or `COMPLETED`; it passes
//! through each at most once (no pause), so the status names the event. Usage: `startedAt` to
//! `endedAt` (or now), and `proxyBytes`.

use serde_json::Value;

use super::{unix_seconds, Lifecycle, ProviderError, Report, Usage};

/// The API key header.
pub const API_KEY: &str = "X-BB-API-Key";

/// The session's URL under `base`.
pub fn url(base: &str, session: &str) -> String {
    format!("{}/v1/sessions/{session}", base.trim_end_matches('/'))
}

/// Reads a session at unix ms `now_ms`.
///
/// # Errors
/// [`ProviderError::Malformed`] without `id` or `status`, or with a time that is not RFC 3339.
pub fn read(session: &Value, now_ms: i64) -> Result<Report, ProviderError> {
    let text = |name: &str| session.get(name).and_then(Value::as_str);
    let malformed = |name: &str| ProviderError::Malformed(format!("no {name}"));
    let status = text("status").ok_or_else(|| malformed("status"))?;
    let time = |name: &str| text(name).map(unix_seconds).transpose();
    let (created, started, ended) = (time("createdAt")?, time("startedAt")?, time("endedAt")?);
    let lifecycle = match status {
        "RUNNING" => Lifecycle::Running,
        "PENDING" => Lifecycle::Created,
        "ERROR" | "TIMED_OUT" | "COMPLETED" => Lifecycle::Terminated,
        _ => Lifecycle::Other,
    };
    let at = match lifecycle {
        Lifecycle::Terminated => ended,
        Lifecycle::Running => started,
        _ => created,
    }
    .or(created)
    .unwrap_or(now_ms / 1000);
    let runtime_ms = started.map(|s| (ended.map_or(now_ms, |e| e * 1000) - s * 1000).max(0) as u64);
    Ok(Report {
        event_id: status.to_owned(),
        sandbox_id: text("id").ok_or_else(|| malformed("id"))?.to_owned(),
        kind: format!("session.{}", status.to_lowercase()),
        lifecycle,
        at,
        metadata: super::string_map(session.get("userMetadata")),
        usage: Some(Usage {
            run: text("id").map(str::to_owned),
            started_at: text("startedAt").map(str::to_owned),
            runtime_ms,
            proxy_bytes: session.get("proxyBytes").and_then(Value::as_u64),
            ..Usage::default()
        }),
    })
}
