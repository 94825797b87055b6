//! Hosts' policies: how their sandboxes' lifecycle events act on sessions, and the rates at
//! which reported usage is paid.

use alloy_primitives::Address;
use serde::{Deserialize, Serialize};

use utoipa::ToSchema;

use super::json::{schema, Amount};
use super::{App, Error};

/// A host's policy (`GET|PUT /v1/host/policy`): what its sandboxes' lifecycle events do to
/// their sessions (the defaults are `lifecycle`'s table), and the rates of metering.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Policy {
    /// What a terminated sandbox does to its sessions.
    #[serde(default)]
    pub on_terminated: OnTerminated,
    /// What a paused sandbox does to its sessions.
    #[serde(default)]
    pub on_paused: OnPaused,
    /// Rates at which reported usage is paid from the session, and to whom (none: usage is
    /// recorded, not paid).
    #[serde(default)]
    pub metering: Option<Rates>,
}

/// What a terminated sandbox does to its sessions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnTerminated {
    /// Revoke, then close (the refund goes to the owner).
    #[default]
    Close,
    /// Revoke only: the owner closes (and may first settle pending payments).
    Revoke,
    /// Record the event; the capability token stays alive.
    Record,
}

/// What a paused sandbox does to its sessions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnPaused {
    /// Heartbeats stop renewing the lease until the sandbox runs again.
    #[default]
    HoldLease,
    /// Record the event only.
    Record,
}

/// Host `host_id`'s policy.
pub async fn load(app: &App, host_id: &str) -> Result<Policy, Error> {
    match app.store.host_policy(host_id).await? {
        Some(json) => serde_json::from_str(&json).map_err(|e| {
            tracing::error!(host = %host_id, error = %e, "stored policy does not parse");
            Error::Internal
        }),
        None => Ok(Policy::default()),
    }
}

/// Sets host `host_id`'s policy; it applies to events received from now on.
pub async fn set(app: &App, host_id: &str, policy: Policy) -> Result<Policy, Error> {
    let json = serde_json::to_string(&policy).map_err(|_| Error::Internal)?;
    app.store.set_host_policy(host_id, &json).await?;
    tracing::info!(host = %host_id, ?policy, "lifecycle policy set");
    Ok(policy)
}

/// A host's rates (token base units per unit) and who is paid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rates {
    /// Who is paid (it must be on the session's allowlist, as any payee).
    #[schema(value_type = schema::Address)]
    pub payee: Address,
    /// Per vCPU-second of run time.
    #[serde(default)]
    pub per_vcpu_second: Amount,
    /// Per GiB-second of memory (1,024 MiB) of run time.
    #[serde(default)]
    pub per_gb_second: Amount,
    /// Per byte through the provider's proxy.
    #[serde(default)]
    pub per_proxy_byte: Amount,
}
