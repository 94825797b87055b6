//! Runloop devboxes, which send no lifecycle webhooks: the relayer polls
//! `GET {base}/v1/devboxes/{id}` with the host's API key (`Authorization: Bearer`).
//!
//! A devbox's `status` is `provisioning`, `initializing`, `running`, `suspending`, `suspended`,
//! `resuming`, `failure` or `shutdown`; `state_transitions` lists `{status,
//! transition_time_ms}`, which names each reading's event (a status entered at a time happens
//! once) and meters the devbox's running time.

use serde_json::Value;

use super::{Lifecycle, ProviderError, Report, Usage};

/// The devbox's URL under `base`.
pub fn url(base: &str, devbox: &str) -> String {
    format!("{}/v1/devboxes/{devbox}", base.trim_end_matches('/'))
}

/// Reads a `DevboxView` at unix ms `now_ms`.
///
/// # Errors
/// [`ProviderError::Malformed`] without `id` or `status`.
pub fn read(view: &Value, now_ms: i64) -> Result<Report, ProviderError> {
    let text = |name: &str| {
        view.get(name)
            .and_then(Value::as_str)
            .ok_or_else(|| ProviderError::Malformed(format!("no {name}")))
    };
    let status = text("status")?;
    let created = view.get("create_time_ms").and_then(Value::as_i64);
    let transitions: Vec<(&str, i64)> = view
        .get("state_transitions")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|t| {
                    Some((
                        t.get("status")?.as_str()?,
                        t.get("transition_time_ms")?.as_i64()?,
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    // When it entered its current status: the last transition to it.
    let since = transitions
        .iter()
        .rev()
        .find(|(s, _)| *s == status)
        .map(|(_, at)| *at)
        .or(created)
        .unwrap_or(now_ms);
    let end = view
        .get("end_time_ms")
        .and_then(Value::as_i64)
        .unwrap_or(now_ms);
    let running_ms: i64 = transitions
        .iter()
        .enumerate()
        .filter(|(_, (s, _))| *s == "running")
        .map(|(i, (_, from))| transitions.get(i + 1).map_or(end, |(_, to)| *to) - from)
        .sum();
    let lifecycle = match status {
        "running" => Lifecycle::Running,
        "suspending" | "suspended" => Lifecycle::Paused,
        "failure" | "shutdown" => Lifecycle::Terminated,
        "provisioning" | "initializing" => Lifecycle::Created,
        _ => Lifecycle::Other,
    };
    let reason = ["failure_reason", "shutdown_reason"]
        .iter()
        .find_map(|k| view.get(*k).and_then(Value::as_str));
    Ok(Report {
        event_id: format!("{status}@{since}"),
        sandbox_id: text("id")?.to_owned(),
        kind: match reason {
            Some(reason) => format!("devbox.{status}: {reason}"),
            None => format!("devbox.{status}"),
        },
        lifecycle,
        at: since / 1000,
        metadata: super::string_map(view.get("metadata")),
        usage: Some(Usage {
            runtime_ms: Some(running_ms.max(0) as u64),
            ..Usage::default()
        }),
    })
}
