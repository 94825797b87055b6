//! Sessions as the API shows them: the stored row, the wallet's state now, the sandbox's
//! lifecycle events and the metering charges.

use alloy_primitives::{keccak256, U256};
use bursar_bindings::wallet::{ISessionWallet, SessionStatus};
use serde::Serialize;
use serde_json::{json, Value};

use super::host_session;
use crate::hosts::Host;
use crate::kernel::json::eip55;
use crate::kernel::session::{parse_id, stored_terms};
use crate::kernel::{App, Error};
use crate::store::{SessionRow, WindDown};

/// A session as the API shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    /// The on-chain id.
    pub session_id: String,
    /// The relayer's view: `prepared`, `opening`, `open` or `failed`.
    pub status: &'static str,
    /// The owner.
    pub owner: String,
    /// The custodial session key.
    pub session_key: String,
    /// The relayer signer pinned to it.
    pub lease_keeper: String,
    /// The provider named at prepare.
    pub provider: Option<String>,
    /// The sandbox named at prepare.
    pub sandbox_id: Option<String>,
    /// The terms, as the owner signed them.
    pub terms: Value,
    /// Whether the host revoked the capability token.
    pub capability_revoked: bool,
    /// The sandbox's last heartbeat (unix ms).
    pub last_heartbeat_at: Option<i64>,
    /// When it was prepared (unix ms).
    pub created_at: i64,
    /// `running`, `paused` or `terminated`, as the sandbox's lifecycle events reported it.
    pub sandbox_state: Option<String>,
    /// Whether the relayer is revoking and closing it (its sandbox terminated).
    pub winding_down: bool,
    /// The contracts' state now (only on `GET /v1/sessions/{id}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chain: Option<ChainState>,
    /// The sandbox's lifecycle events and what each did, newest first (only on
    /// `GET /v1/sessions/{id}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Vec<Value>>,
    /// The usage charged at the host's rates, oldest first (only on `GET /v1/sessions/{id}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metering: Option<Vec<Value>>,
}

/// A session's on-chain state, as the wallet reports it at the latest block.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainState {
    /// `unknown`, `active`, `revoked` or `closed`.
    pub status: &'static str,
    /// Whether it can pay now (active, started, unexpired, lease current).
    pub can_pay: bool,
    /// Escrowed.
    pub deposit: String,
    /// Paid out.
    pub spent: String,
    /// Held by pending payments.
    pub reserved: String,
    /// What may still be paid from the deposit.
    pub remaining_deposit: String,
    /// What may still be paid this period (2^256-1 without a budget).
    pub remaining_period_budget: String,
    /// Spent in the current period.
    pub period_spent: String,
    /// The current period's start (unix seconds).
    pub period_start: u64,
    /// The lease's expiry (unix seconds; 0 without a lease).
    pub lease_expires_at: u64,
}

impl SessionView {
    fn of(row: SessionRow) -> Result<Self, Error> {
        let terms = stored_terms(&row)?.typed_data["openSession"]["message"].clone();
        Ok(SessionView {
            session_id: row.id,
            status: row.status.as_str(),
            owner: eip55(&row.owner),
            session_key: eip55(&row.session_key),
            lease_keeper: eip55(&row.signer),
            provider: row.provider,
            sandbox_id: row.sandbox_id,
            terms,
            capability_revoked: row.capability_revoked_at.is_some(),
            last_heartbeat_at: row.last_heartbeat_at,
            created_at: row.created_at,
            sandbox_state: row.sandbox_state,
            winding_down: row.winding_down != WindDown::No,
            chain: None,
            lifecycle: None,
            metering: None,
        })
    }
}

/// `host`'s sessions, newest first (filters: provider, sandbox; paging by `before`).
pub async fn list(
    app: &App,
    host: &Host,
    provider: Option<&str>,
    sandbox_id: Option<&str>,
    before: Option<i64>,
    limit: Option<i64>,
) -> Result<Vec<SessionView>, Error> {
    let limit = limit.unwrap_or(100).clamp(1, 1000);
    let rows = app
        .store
        .sessions(
            &host.id,
            provider,
            sandbox_id,
            before.unwrap_or(i64::MAX),
            limit,
        )
        .await?;
    rows.into_iter().map(SessionView::of).collect()
}

/// One of `host`'s sessions with its on-chain state.
pub async fn get(app: &App, host: &Host, id: &str) -> Result<SessionView, Error> {
    let row = host_session(&app.store, host, id).await?;
    let chain = chain_state(app, parse_id(&row.id)?).await?;
    let lifecycle = history(app, &row.id).await?;
    let mut view = SessionView::of(row)?;
    view.chain = Some(chain);
    view.lifecycle = Some(lifecycle);
    view.metering = Some(charges(app, &view.session_id).await?);
    Ok(view)
}

/// The wallet's view of session `id` now.
pub async fn chain_state(app: &App, id: U256) -> Result<ChainState, Error> {
    let wallet = app.contracts.wallet;
    let (state, authority, deposit_left, period_left) = tokio::try_join!(
        app.client.view(
            None,
            wallet,
            ISessionWallet::sessionStateCall { sessionId: id }
        ),
        app.client.view(
            None,
            wallet,
            ISessionWallet::sessionAuthorityCall { sessionId: id }
        ),
        app.client.view(
            None,
            wallet,
            ISessionWallet::remainingDepositCall { sessionId: id }
        ),
        app.client.view(
            None,
            wallet,
            ISessionWallet::remainingPeriodBudgetCall { sessionId: id }
        ),
    )?;
    Ok(ChainState {
        status: match state._0 {
            s if s == SessionStatus::Active as u8 => "active",
            s if s == SessionStatus::Revoked as u8 => "revoked",
            s if s == SessionStatus::Closed as u8 => "closed",
            _ => "unknown",
        },
        can_pay: authority._2,
        deposit: state._1.to_string(),
        spent: state._2.to_string(),
        reserved: state._3.to_string(),
        remaining_deposit: deposit_left.to_string(),
        remaining_period_budget: period_left.to_string(),
        period_spent: state._4.to_string(),
        period_start: state._5,
        lease_expires_at: state._6,
    })
}

/// A session's lifecycle events as the API shows them, newest first.
async fn history(app: &App, session_id: &str) -> Result<Vec<Value>, Error> {
    let rows = app.store.session_lifecycle(session_id, 50).await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            json!({
                "id": r.id,
                "source": r.source,
                "eventId": r.event_id,
                "kind": r.kind,
                "lifecycle": r.lifecycle,
                "at": r.at,
                "action": r.action,
                "receivedAt": r.received_at,
                "report": serde_json::from_str::<Value>(&r.report).unwrap_or(Value::Null),
            })
        })
        .collect())
}

/// A session's metering charges as the API shows them.
async fn charges(app: &App, session_id: &str) -> Result<Vec<Value>, Error> {
    Ok(app
        .store
        .charges(session_id)
        .await?
        .into_iter()
        .map(|c| {
            json!({
                "run": c.run, "metered": c.metered, "amount": c.amount,
                "paymentId": c.payment_id, "error": c.error_code,
                "purpose": format!("{}", keccak256(c.summary.as_bytes())),
                "summary": serde_json::from_str::<Value>(&c.summary).unwrap_or(Value::Null),
                "createdAt": c.created_at,
            })
        })
        .collect())
}
