//! A session lives and dies with its sandbox. Lifecycle events (a provider's verified webhook, a
//! poller's reading, or the host's own word) are recorded once per event id, matched to the
//! sessions the host bound to that sandbox at prepare, and acted on:
//!
//! | event | action |
//! |---|---|
//! | terminated (killed, destroyed, failed, timed out) | `wind_down`: the capability token dies at once; the relayer revokes the session on chain (when it is the guardian), then closes it (the refund goes to the owner) as soon as the chain allows |
//! | paused | `hold_lease`: heartbeats stop renewing the lease, so the session lapses and cannot pay |
//! | resumed / running after a pause | `renew_lease`: the relayer, the lease keeper, renews (reviving a lapsed lease) |
//! | created, other | `none`: recorded only |
//!
//! An event older than the state it finds is recorded as `stale` and changes nothing; a
//! terminated sandbox stays terminated (`ended`). Each action is recorded with its event in the
//! same database transaction as the state it sets and the `session.sandbox` webhook announcing
//! it; the chain work of winding down is done by [`run`] from that record, so it survives a
//! crash and is never done twice.

use alloy_sol_types::SolCall;
use bursar_bindings::wallet::{ISessionWallet, SessionStatus};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::engine::random::random_bytes;
use crate::kernel::json::parse_session_id;
use crate::kernel::policy::{self, OnPaused, OnTerminated, Policy};
use crate::kernel::session::send;
use crate::kernel::{App, Error, PassError};
use crate::providers::{self, Lifecycle, Provider, ProviderError, Report, SecretError};
use crate::store::{
    now_ms, NewLifecycleEvent, OpenStatus, SessionRow, SessionTx, Store, StoreError, TxStatus,
    WindDown,
};
use crate::{sessions, webhooks};

/// What an event did to one session.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Effect {
    /// The session.
    pub session_id: String,
    /// `wind_down`, `hold_lease`, `renew_lease`, `none`, `stale` or `ended`.
    pub action: &'static str,
}

/// What receiving an event did.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = LifecycleReceived)]
pub struct Received {
    /// The relayer's id of the recorded event (`lce_…`); none for a duplicate.
    pub event: Option<String>,
    /// Whether the host already had an event of this source and id: nothing was changed.
    pub duplicate: bool,
    /// What it did to each session bound to the sandbox (none when no session is bound yet).
    pub sessions: Vec<Effect>,
}

/// What to do to a session: the action's name, the sandbox state to record, and how to wind
/// the session down.
type Decision = (&'static str, Option<&'static str>, WindDown);

/// The action `lifecycle` at `at` takes, under `policy`, on a session whose sandbox is in
/// `state` (set by an event at `state_at`).
fn decide(
    policy: Policy,
    state: Option<&str>,
    state_at: Option<i64>,
    lifecycle: Lifecycle,
    at: i64,
) -> Decision {
    if state == Some("terminated") {
        return ("ended", None, WindDown::No);
    }
    if lifecycle == Lifecycle::Terminated {
        // Whatever came before: a sandbox that is gone does not come back.
        return match policy.on_terminated {
            OnTerminated::Close => ("wind_down", Some("terminated"), WindDown::Close),
            OnTerminated::Revoke => ("revoke", Some("terminated"), WindDown::Revoke),
            OnTerminated::Record => ("none", Some("terminated"), WindDown::No),
        };
    }
    if state_at.is_some_and(|t| at < t) {
        return ("stale", None, WindDown::No);
    }
    match lifecycle {
        Lifecycle::Paused if policy.on_paused == OnPaused::Record => ("none", None, WindDown::No),
        Lifecycle::Paused => ("hold_lease", Some("paused"), WindDown::No),
        Lifecycle::Running | Lifecycle::Resumed if state == Some("paused") => {
            ("renew_lease", Some("running"), WindDown::No)
        }
        Lifecycle::Running | Lifecycle::Resumed => ("none", Some("running"), WindDown::No),
        Lifecycle::Created | Lifecycle::Other | Lifecycle::Terminated => {
            ("none", None, WindDown::No)
        }
    }
}

/// Records `report` from `source` (a provider's name, or `api`) for `host_id` and acts on the
/// sessions it concerns: `session` when given (the host named it), else those bound to
/// (`source`, the report's sandbox). A duplicate (same host, source and event id) changes
/// nothing.
pub async fn receive(
    app: &App,
    host_id: &str,
    source: &str,
    report: &Report,
    session: Option<&SessionRow>,
) -> Result<Received, Error> {
    let id = format!(
        "lce_{}",
        alloy_primitives::hex::encode(random_bytes::<12>())
    );
    let lifecycle = serde_json::to_value(report.lifecycle).map_err(|_| Error::Internal)?;
    let lifecycle = lifecycle.as_str().unwrap_or("other");
    let evidence = json!({ "metadata": report.metadata, "usage": report.usage }).to_string();
    let now = now_ms();
    let mut db = app.store.begin().await?;
    let new = NewLifecycleEvent {
        id: &id,
        host_id,
        source,
        event_id: &report.event_id,
        sandbox_id: Some(report.sandbox_id.as_str()).filter(|s| !s.is_empty()),
        kind: &report.kind,
        lifecycle,
        at: report.at,
        report: &evidence,
    };
    if !Store::insert_lifecycle_event(&mut db, &new, now).await? {
        app.process.deliveries.count(source, "duplicate");
        return Ok(Received {
            event: None,
            duplicate: true,
            sessions: Vec::new(),
        });
    }
    let bound = match session {
        Some(row) => vec![row.clone()],
        None => Store::sandbox_sessions(&mut db, host_id, source, &report.sandbox_id).await?,
    };
    let policy = policy::load(app, host_id).await?;
    let mut effects = Vec::with_capacity(bound.len());
    let mut to_renew = Vec::new();
    for row in &bound {
        let (action, state, wind_down) = decide(
            policy,
            row.sandbox_state.as_deref(),
            row.sandbox_state_at,
            report.lifecycle,
            report.at,
        );
        let state = state.map(|s| (s, report.at));
        Store::apply_lifecycle(&mut db, &id, &row.id, action, state, wind_down, now).await?;
        let data = json!({
            "sessionId": row.id,
            "source": source,
            "eventId": report.event_id,
            "sandboxId": report.sandbox_id,
            "kind": report.kind,
            "lifecycle": lifecycle,
            "at": report.at,
            "action": action,
        });
        webhooks::emit_in(&mut db, host_id, "session.sandbox", &row.id, &id, data).await?;
        if action == "renew_lease" && row.status == OpenStatus::Open {
            to_renew.push(row.clone());
        }
        effects.push(Effect {
            session_id: row.id.clone(),
            action,
        });
    }
    db.commit().await.map_err(crate::store::StoreError::from)?;
    app.process.deliveries.count(source, "accepted");
    app.wakes.settled.send_modify(|n| *n += 1);
    app.wakes.webhooks_due.notify_one();
    if effects
        .iter()
        .any(|e| matches!(e.action, "wind_down" | "revoke"))
    {
        app.wakes.lifecycle_due.notify_one();
    }
    tracing::info!(host = %host_id, source, event = %report.event_id, sandbox = %report.sandbox_id,
        lifecycle, sessions = effects.len(), "lifecycle event");
    if report.usage.is_some() {
        for row in bound.iter().filter(|r| r.status == OpenStatus::Open) {
            // A failure is retried before the session is wound down, at the latest.
            if let Err(e) = crate::metering::charge(app, row).await {
                tracing::warn!(session = %row.id, error = %e, "metering failed");
            }
        }
    }
    for row in to_renew {
        // At once rather than at the next heartbeat; if this fails the heartbeat renews.
        if let Err(e) = sessions::renew_lease(app, &row).await {
            tracing::warn!(session = %row.id, error = %e, "renewing on resume failed");
        }
    }
    Ok(Received {
        event: Some(id),
        duplicate: false,
        sessions: effects,
    })
}

/// `POST /v1/sessions/{id}/lifecycle`: a host's own report of its sandbox's state, for
/// providers the relayer has no bridge to (Modal, a self-run sandbox).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LifecycleRequest {
    /// `running`, `paused`, `resumed` or `terminated`.
    pub state: HostState,
    /// The host's id of this event, for deduplication (default: a fresh one).
    #[schema(min_length = 1, max_length = 128)]
    pub event_id: Option<String>,
    /// When it happened (unix seconds; default: now).
    pub at: Option<i64>,
    /// Why, in the host's words (recorded).
    #[schema(max_length = 512)]
    pub reason: Option<String>,
}

/// What a host may report.
#[derive(Clone, Copy, Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum HostState {
    /// It runs.
    Running,
    /// It is paused.
    Paused,
    /// It came back from a pause.
    Resumed,
    /// It is gone.
    Terminated,
}

/// Records a host's report on one of its sessions' sandbox.
pub async fn report(app: &App, row: &SessionRow, req: LifecycleRequest) -> Result<Received, Error> {
    let event_id = match req.event_id {
        Some(id) if id.is_empty() || id.len() > 128 => {
            return Err(Error::invalid("eventId", "eventId must be 1 to 128 bytes"))
        }
        Some(id) => id,
        None => alloy_primitives::hex::encode(random_bytes::<16>()),
    };
    if req.reason.as_ref().is_some_and(|r| r.len() > 512) {
        return Err(Error::invalid("reason", "reason must be at most 512 bytes"));
    }
    let lifecycle = match req.state {
        HostState::Running => Lifecycle::Running,
        HostState::Paused => Lifecycle::Paused,
        HostState::Resumed => Lifecycle::Resumed,
        HostState::Terminated => Lifecycle::Terminated,
    };
    let report = Report {
        event_id,
        sandbox_id: row.sandbox_id.clone().unwrap_or_default(),
        kind: req.reason.unwrap_or_else(|| "host report".into()),
        lifecycle,
        at: req.at.unwrap_or(now_ms() / 1000),
        metadata: Default::default(),
        usage: None,
    };
    receive(app, &row.host_id, "api", &report, Some(row)).await
}

/// One pass: for each session winding down, the next step the chain allows — revoke it (when
/// the relayer is its guardian), close it once it is revoked, expired or lapsed, or, once it is
/// closed, mark it done. A step already in flight is not sent again, and each is simulated
/// first: a step the wallet would refuse now is left for a later pass.
pub async fn wind_down(app: &App) -> Result<(), PassError> {
    for row in app.store.winding_down().await? {
        // The session pays for what its sandbox used before it is revoked.
        if let Err(e) = crate::metering::charge(app, &row).await {
            tracing::warn!(session = %row.id, error = %e, "metering before winding down failed");
            continue;
        }
        let id = parse_session_id(&row.id)
            .ok_or_else(|| StoreError::Corrupt(format!("session id {:?}", row.id)))?;
        let signer = row.signer;
        let wallet = app.contracts.wallet;
        let state = app
            .client
            .view(
                None,
                wallet,
                ISessionWallet::sessionStateCall { sessionId: id },
            )
            .await?;
        let done = match row.winding_down {
            WindDown::Revoke => state._0 != SessionStatus::Active as u8,
            _ => state._0 == SessionStatus::Closed as u8,
        };
        if done {
            app.store.wound_down(&row.id).await?;
            app.wakes.settled.send_modify(|n| *n += 1);
            tracing::info!(session = %row.id, "session wound down");
            continue;
        }
        let close = ISessionWallet::closeCall { sessionId: id };
        let revoke = ISessionWallet::revokeCall { sessionId: id };
        let closing = row.winding_down == WindDown::Close;
        let (which, data) = if closing
            && app
                .client
                .view(Some(signer), wallet, close.clone())
                .await
                .is_ok()
        {
            (SessionTx::Close, close.abi_encode())
        } else if state._0 == SessionStatus::Active as u8
            && app
                .client
                .view(Some(signer), wallet, revoke.clone())
                .await
                .is_ok()
        {
            (SessionTx::Revoke, revoke.abi_encode())
        } else {
            // Not the guardian and neither lapsed nor expired yet: the lease is not renewed,
            // so it will lapse.
            continue;
        };
        let sent = match which {
            SessionTx::Close => row.close_transaction,
            _ => row.revoke_transaction,
        };
        if in_flight(app, sent).await? {
            continue;
        }
        send(app, &row, wallet, data, which).await?;
        tracing::info!(session = %row.id, step = ?which, "winding session down");
    }
    Ok(())
}

/// Whether transaction `tx` may still succeed (not yet mined, or mined successfully).
async fn in_flight(app: &App, tx: Option<i64>) -> Result<bool, StoreError> {
    let Some(tx) = tx else { return Ok(false) };
    Ok(match app.store.transaction(tx).await? {
        Some(t) => match t.status {
            TxStatus::Signed | TxStatus::Submitted => true,
            TxStatus::Failed => false,
            _ => t.receipt_status == Some(1),
        },
        None => false,
    })
}

/// Verifies a delivery of `provider`'s webhook to host `host_id` with the host's secret for
/// it, then records and acts on what it reports ([`receive`]). A provider event that is not
/// about a sandbox's lifecycle is answered and ignored; a refused delivery changes nothing and
/// is counted by reason.
pub async fn deliver(
    app: &App,
    host_id: &str,
    provider: Provider,
    headers: &http::HeaderMap,
    body: &[u8],
) -> Result<Received, Error> {
    let refused = |e: ProviderError| {
        app.process.deliveries.count(provider.name(), e.code());
        tracing::info!(host = %host_id, provider = provider.name(), reason = %e, "delivery refused");
        Error::from(e)
    };
    if provider.polled() {
        return Err(Error::NotFound);
    }
    providers::within_limit(body).map_err(refused)?;
    let secret = match providers::secret(&app.store, &app.custody.master_key, host_id, provider)
        .await
    {
        Ok(Some(secret)) => secret,
        Ok(None) => return Err(refused(ProviderError::NotConfigured)),
        Err(SecretError::Store(e)) => return Err(e.into()),
        Err(e) => {
            tracing::error!(host = %host_id, provider = provider.name(), error = %e, "provider secret does not open");
            return Err(Error::Internal);
        }
    };
    let now = now_ms() / 1000;
    match providers::verify(provider, &secret, headers, body, now).map_err(refused)? {
        Some(report) => receive(app, host_id, provider.name(), &report, None).await,
        None => {
            app.process.deliveries.count(provider.name(), "ignored");
            Ok(Received {
                event: None,
                duplicate: false,
                sessions: Vec::new(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_never_revives_a_terminated_sandbox_nor_steps_back_in_time() {
        use Lifecycle::*;
        let p = Policy::default();
        let d = |state, state_at, lifecycle, at| decide(p, state, state_at, lifecycle, at);
        let wind_down = ("wind_down", Some("terminated"), WindDown::Close);
        assert_eq!(d(None, None, Terminated, 5), wind_down);
        // Terminated wins even when it arrives after a later event.
        assert_eq!(d(Some("running"), Some(10), Terminated, 5), wind_down);
        for later in [Running, Resumed, Paused, Created, Other, Terminated] {
            assert_eq!(
                d(Some("terminated"), Some(5), later, 9),
                ("ended", None, WindDown::No)
            );
        }
        let stale = ("stale", None, WindDown::No);
        assert_eq!(d(Some("running"), Some(10), Paused, 9), stale);
        let hold = ("hold_lease", Some("paused"), WindDown::No);
        assert_eq!(d(Some("running"), Some(10), Paused, 10), hold);
        let renew = ("renew_lease", Some("running"), WindDown::No);
        assert_eq!(d(Some("paused"), Some(10), Resumed, 11), renew);
        assert_eq!(d(Some("paused"), Some(10), Running, 12), renew);
        assert_eq!(d(Some("paused"), Some(10), Resumed, 9), stale);
        assert_eq!(
            d(None, None, Running, 1),
            ("none", Some("running"), WindDown::No)
        );
        assert_eq!(
            d(Some("paused"), Some(1), Other, 2),
            ("none", None, WindDown::No)
        );
    }

    #[test]
    fn a_host_may_revoke_only_or_record_only() {
        use Lifecycle::*;
        let revoke = Policy {
            on_terminated: OnTerminated::Revoke,
            on_paused: OnPaused::Record,
            metering: None,
        };
        assert_eq!(
            decide(revoke, None, None, Terminated, 1),
            ("revoke", Some("terminated"), WindDown::Revoke)
        );
        assert_eq!(
            decide(revoke, None, None, Paused, 1),
            ("none", None, WindDown::No)
        );
        let record = Policy {
            on_terminated: OnTerminated::Record,
            ..Policy::default()
        };
        assert_eq!(
            decide(record, None, None, Terminated, 1),
            ("none", Some("terminated"), WindDown::No)
        );
        // Unknown fields and values are refused, missing ones take the defaults.
        assert!(serde_json::from_str::<Policy>(r#"{"onTerminated":"explode"}"#).is_err());
        assert!(serde_json::from_str::<Policy>(r#"{"onKilled":"close"}"#).is_err());
        assert_eq!(
            serde_json::from_str::<Policy>("{}").unwrap(),
            Policy::default()
        );
    }
}
