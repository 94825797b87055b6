//! Sandbox providers' lifecycle reports. Each provider's webhook is verified on the raw body
//! before anything in it is read, then parsed into one shape, [`Report`], that session
//! policies act on. A report names its sandbox by the provider's id only: the relayer matches it
//! to a session through its own binding of (host, provider, sandbox id), never through metadata
//! the payload echoes back.
//!
//! * [`e2b`] — E2B's lifecycle webhooks: `e2b-signature`, payload versions v1 and v2.
//! * [`daytona`] — Daytona's, delivered by Svix: `svix-id`, `svix-timestamp`, `svix-signature`.
//! * [`vercel`] — Vercel Sandbox's session webhooks: `x-vercel-signature`.
//!
//! Providers without lifecycle webhooks are polled (`jobs::poll_providers`):
//!
//! * [`runloop`] — Runloop devboxes.
//! * [`browserbase`] — Browserbase sessions.
//!
//! Modal, whose API is gRPC, is bridged by the host through `POST /v1/sessions/{id}/lifecycle`.

pub mod browserbase;
pub mod daytona;
pub mod e2b;
pub mod runloop;
mod secrets;
pub mod vercel;
mod verify;

pub use secrets::{secret, set_secret, SecretError};
pub use verify::verify;

use std::collections::BTreeMap;
use std::time::Duration;

use http::HeaderMap;
use serde::Serialize;

use crate::kernel::error::{Error, Refusal};

/// A provider the relayer bridges: by its signed webhooks, or by polling its API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// E2B ([`e2b`]).
    E2b,
    /// Daytona ([`daytona`]).
    Daytona,
    /// Vercel Sandbox ([`vercel`]).
    Vercel,
    /// Runloop ([`runloop`], polled).
    Runloop,
    /// Browserbase ([`browserbase`], polled).
    Browserbase,
}

impl Provider {
    /// Every provider.
    pub const ALL: [Provider; 5] = [
        Provider::E2b,
        Provider::Daytona,
        Provider::Vercel,
        Provider::Runloop,
        Provider::Browserbase,
    ];

    /// Its name in paths, flags and the database.
    pub fn name(self) -> &'static str {
        match self {
            Provider::E2b => "e2b",
            Provider::Daytona => "daytona",
            Provider::Vercel => "vercel",
            Provider::Runloop => "runloop",
            Provider::Browserbase => "browserbase",
        }
    }

    /// Whether the relayer polls it (its secret is an API key) rather than verifying its
    /// webhooks (its secret is a signing secret).
    pub fn polled(self) -> bool {
        matches!(self, Provider::Runloop | Provider::Browserbase)
    }
}

impl std::str::FromStr for Provider {
    type Err = SecretError;

    fn from_str(name: &str) -> Result<Self, SecretError> {
        Provider::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| SecretError::UnknownProvider(name.to_owned()))
    }
}

/// How far a delivery's own time may be from ours: Svix's tolerance, also applied to E2B's
/// signed payload time (E2B retries a failed delivery 3 times, 10 s apart).
pub const TOLERANCE: Duration = Duration::from_secs(300);

/// The most a provider's delivery may weigh; larger bodies are refused unread.
pub const MAX_BODY: usize = 64 * 1024;

/// What happened to a sandbox, in the terms session policies act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Lifecycle {
    /// It was created (it may not run yet).
    Created,
    /// It runs.
    Running,
    /// It is paused or stopped and may come back: its session's lease is not renewed.
    Paused,
    /// It came back from a pause: lease renewal resumes.
    Resumed,
    /// It is gone for good (killed, destroyed, failed, timed out): its session is revoked, then
    /// closed.
    Terminated,
    /// Anything else the provider reports (a configuration update, a snapshot): recorded only.
    Other,
}

/// Compute a provider reported with an event (E2B's `execution` block, a stopped Vercel
/// session's usage).
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Usage {
    /// The run this usage is of, counted from its start (E2B's execution id, Vercel's session
    /// id); `None`: the sandbox's whole life so far (Runloop). Later reports of the same run
    /// supersede earlier ones, so a run is metered once.
    pub run: Option<String>,
    /// When this run of the sandbox started (RFC 3339, as the provider wrote it).
    pub started_at: Option<String>,
    /// vCPUs assigned.
    pub vcpus: Option<u64>,
    /// Memory assigned, MiB.
    pub memory_mb: Option<u64>,
    /// How long this run has lasted, in milliseconds.
    pub runtime_ms: Option<u64>,
    /// CPU time actually used, in milliseconds.
    pub active_cpu_ms: Option<u64>,
    /// Bytes received from the network.
    pub ingress_bytes: Option<u64>,
    /// Bytes sent to the network.
    pub egress_bytes: Option<u64>,
    /// Bytes through the provider's proxy (Browserbase).
    pub proxy_bytes: Option<u64>,
}

/// One verified delivery.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// The provider's id of the event, the same on every retry of it: what deliveries are
    /// deduplicated on.
    pub event_id: String,
    /// The provider's id of the sandbox.
    pub sandbox_id: String,
    /// The provider's own name for what happened (`sandbox.lifecycle.killed`,
    /// `sandbox.state.updated: started -> stopped`).
    pub kind: String,
    /// What it means for the session.
    pub lifecycle: Lifecycle,
    /// When the provider says it happened (unix seconds).
    pub at: i64,
    /// The metadata the provider echoed (E2B's `sandbox_metadata`): kept as evidence, never
    /// used to find the session.
    pub metadata: BTreeMap<String, String>,
    /// Compute used, when the provider reported it.
    pub usage: Option<Usage>,
}

/// Why a delivery is refused. Nothing is changed by a refused delivery.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// The host has no signing secret for this provider (or there is no such host).
    #[error("no signing secret is configured for this host and provider")]
    NotConfigured,
    /// A header the provider's scheme requires is missing or not text.
    #[error("missing header {0}")]
    MissingHeader(&'static str),
    /// The signing secret configured for the host is not in the provider's format.
    #[error("the configured secret is not in the provider's format")]
    BadSecret,
    /// No signature in the delivery matches its body under the host's secret.
    #[error("the signature does not match")]
    BadSignature,
    /// The delivery's time is missing or further than [`TOLERANCE`] from now: a replay, or a
    /// clock too far off.
    #[error("stale delivery (more than {}s from now)", TOLERANCE.as_secs())]
    Stale,
    /// The body is over [`MAX_BODY`] bytes.
    #[error("body over {MAX_BODY} bytes")]
    TooLarge,
    /// The body is signed but not a payload of the provider's format.
    #[error("malformed payload: {0}")]
    Malformed(String),
}

impl ProviderError {
    /// Its stable code in the API's errors and the metrics.
    pub fn code(&self) -> &'static str {
        match self {
            ProviderError::NotConfigured => "provider_not_configured",
            ProviderError::MissingHeader(_) => "missing_signature_header",
            ProviderError::BadSecret => "provider_secret_invalid",
            ProviderError::BadSignature => "bad_signature",
            ProviderError::Stale => "stale_delivery",
            ProviderError::TooLarge => "body_too_large",
            ProviderError::Malformed(_) => "malformed_payload",
        }
    }
}

impl From<ProviderError> for Error {
    fn from(e: ProviderError) -> Error {
        let refusal = match e {
            ProviderError::TooLarge => Refusal::TooLarge,
            ProviderError::Malformed(_) => Refusal::Malformed,
            _ => Refusal::Unauthenticated,
        };
        Error::Delivery {
            code: e.code(),
            message: e.to_string(),
            refusal,
        }
    }
}

/// The string values of a JSON object (metadata a provider echoes), others dropped.
fn string_map(object: Option<&serde_json::Value>) -> BTreeMap<String, String> {
    object
        .and_then(serde_json::Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// Refuses a body over [`MAX_BODY`] bytes, unread.
pub fn within_limit(body: &[u8]) -> Result<(), ProviderError> {
    match body.len() <= MAX_BODY {
        true => Ok(()),
        false => Err(ProviderError::TooLarge),
    }
}

/// The value of header `name` in `headers`.
fn header<'a>(headers: &'a HeaderMap, name: &'static str) -> Result<&'a str, ProviderError> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .ok_or(ProviderError::MissingHeader(name))
}

/// Unix seconds of an RFC 3339 time.
fn unix_seconds(text: &str) -> Result<i64, ProviderError> {
    time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .map(|t| t.unix_timestamp())
        .map_err(|e| ProviderError::Malformed(format!("time {text:?}: {e}")))
}

/// Refuses a delivery whose time `at` is further than [`TOLERANCE`] from `now`.
fn fresh(at: i64, now: i64) -> Result<(), ProviderError> {
    match at.abs_diff(now) <= TOLERANCE.as_secs() {
        true => Ok(()),
        false => Err(ProviderError::Stale),
    }
}

#[cfg(test)]
mod tests;
