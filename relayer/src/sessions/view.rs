//! Sessions as the API shows them: the stored row, the wallet's state now, the sandbox's
//! lifecycle events and the metering charges.

use alloy_primitives::{keccak256, U256};
use bursar_bindings::erc8004::session_agent;
use bursar_bindings::wallet::{ISessionWallet, SessionStatus};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::hosts::Host;
use crate::kernel::json::{schema, session_id_text, Amount};
use crate::kernel::session::{parse_id, stored_terms};
use crate::kernel::{App, Error};
use crate::store::{OpenStatus, SessionRow, Store, WindDown};

/// A session as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Session)]
pub struct SessionView {
    /// The on-chain id.
    pub session_id: String,
    /// The relayer's view of its opening.
    pub status: OpenStatus,
    /// The owner.
    #[schema(value_type = schema::Address)]
    pub owner: String,
    /// The custodial session key.
    #[schema(value_type = schema::Address)]
    pub session_key: String,
    /// The relayer signer pinned to it.
    #[schema(value_type = schema::Address)]
    pub lease_keeper: String,
    /// The provider named at prepare.
    pub provider: Option<String>,
    /// The sandbox named at prepare.
    pub sandbox_id: Option<String>,
    /// The terms, as the owner signed them (`OpenSession`'s message).
    #[schema(value_type = Object)]
    pub terms: Value,
    /// The ERC-8004 agent it runs for (decimal id), when its metadata names one.
    pub agent_id: Option<String>,
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
    pub lifecycle: Option<Vec<LifecycleEntry>>,
    /// The usage charged at the host's rates, oldest first (only on `GET /v1/sessions/{id}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metering: Option<Vec<Charge>>,
}

/// A lifecycle event of a session's sandbox, and what it did to the session.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LifecycleEntry {
    /// `lce_…`.
    pub id: String,
    /// The provider, or `api` for a host's own report.
    pub source: String,
    /// The provider's id of the event.
    pub event_id: String,
    /// The provider's name for it.
    pub kind: String,
    /// What it means: `created`, `running`, `paused`, `resumed`, `terminated` or `other`.
    pub lifecycle: String,
    /// When it happened (unix seconds).
    pub at: i64,
    /// What it did: `wind_down`, `hold_lease`, `renew_lease`, `none`, `stale` or `ended`.
    pub action: String,
    /// When the relayer received it (unix ms).
    pub received_at: i64,
    /// Echoed metadata and reported usage.
    #[schema(value_type = Object)]
    pub report: Value,
}

/// Usage charged at the host's rates.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Charge {
    /// The run charged.
    pub run: String,
    /// The run's cost charged in all, with this charge.
    #[schema(value_type = Amount)]
    pub metered: String,
    /// This charge.
    #[schema(value_type = Amount)]
    pub amount: String,
    /// Its payment. Without this or `error`, the charge is being made.
    pub payment_id: Option<String>,
    /// Why it has none (a contract error's name, or the relayer's code).
    pub error: Option<String>,
    /// The payment's purpose: keccak-256 of `summary`'s JSON.
    #[schema(value_type = schema::Bytes32)]
    pub purpose: String,
    /// What was charged.
    #[schema(value_type = Object)]
    pub summary: Value,
    /// When (unix ms).
    pub created_at: i64,
}

/// A session's on-chain state, as the wallet reports it at the latest block.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChainState {
    /// The wallet's status of it.
    pub status: ChainStatus,
    /// Whether it can pay now (active, started, unexpired, lease current).
    pub can_pay: bool,
    /// Escrowed.
    pub deposit: Amount,
    /// Paid out.
    pub spent: Amount,
    /// Held by pending payments.
    pub reserved: Amount,
    /// What may still be paid from the deposit.
    pub remaining_deposit: Amount,
    /// What may still be paid this period (2^256-1 without a budget).
    pub remaining_period_budget: Amount,
    /// Spent in the current period.
    pub period_spent: Amount,
    /// The current period's start (unix seconds).
    pub period_start: u64,
    /// The lease's expiry (unix seconds; 0 without a lease).
    pub lease_expires_at: u64,
}

/// A session's status in the wallet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChainStatus {
    /// Not opened on chain (or not yet).
    Unknown,
    /// Open: it may pay within its rules.
    Active,
    /// Revoked: it pays no more and may be closed.
    Revoked,
    /// Closed: the rest of its deposit went back to the owner.
    Closed,
}

impl SessionView {
    fn of(row: SessionRow) -> Result<Self, Error> {
        let stored = stored_terms(&row)?;
        let agent_id = session_agent(stored.terms()?.metadata).map(|id| id.to_string());
        let terms = stored.typed_data["openSession"]["message"].clone();
        Ok(SessionView {
            agent_id,
            session_id: row.id,
            status: row.status,
            owner: row.owner.to_checksum(None),
            session_key: row.session_key.to_checksum(None),
            lease_keeper: row.signer.to_checksum(None),
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

/// The wallet's view of session `id` now, every figure read at one block: reads at two
/// blocks could show a lease renewed by one and `canPay` still false by the other.
pub async fn chain_state(app: &App, id: U256) -> Result<ChainState, Error> {
    let (client, wallet) = (&app.client, app.contracts.wallet);
    let at = Some(client.block_number().await?);
    let (state, authority, deposit_left, period_left) = tokio::try_join!(
        client.view_at(
            None,
            wallet,
            ISessionWallet::sessionStateCall { sessionId: id },
            at
        ),
        client.view_at(
            None,
            wallet,
            ISessionWallet::sessionAuthorityCall { sessionId: id },
            at
        ),
        client.view_at(
            None,
            wallet,
            ISessionWallet::remainingDepositCall { sessionId: id },
            at
        ),
        client.view_at(
            None,
            wallet,
            ISessionWallet::remainingPeriodBudgetCall { sessionId: id },
            at
        ),
    )?;
    Ok(ChainState {
        status: match state._0 {
            s if s == SessionStatus::Active as u8 => ChainStatus::Active,
            s if s == SessionStatus::Revoked as u8 => ChainStatus::Revoked,
            s if s == SessionStatus::Closed as u8 => ChainStatus::Closed,
            _ => ChainStatus::Unknown,
        },
        can_pay: authority._2,
        deposit: Amount(state._1),
        spent: Amount(state._2),
        reserved: Amount(state._3),
        remaining_deposit: Amount(deposit_left),
        remaining_period_budget: Amount(period_left),
        period_spent: Amount(state._4),
        period_start: state._5,
        lease_expires_at: state._6,
    })
}

/// A session's lifecycle events as the API shows them, newest first.
async fn history(app: &App, session_id: &str) -> Result<Vec<LifecycleEntry>, Error> {
    let rows = app.store.session_lifecycle(session_id, 50).await?;
    Ok(rows
        .into_iter()
        .map(|r| LifecycleEntry {
            report: serde_json::from_str(&r.report).unwrap_or(Value::Null),
            id: r.id,
            source: r.source,
            event_id: r.event_id,
            kind: r.kind,
            lifecycle: r.lifecycle,
            at: r.at,
            action: r.action,
            received_at: r.received_at,
        })
        .collect())
}

/// A session's metering charges as the API shows them.
async fn charges(app: &App, session_id: &str) -> Result<Vec<Charge>, Error> {
    Ok(app
        .store
        .charges(session_id)
        .await?
        .into_iter()
        .map(|c| Charge {
            purpose: format!("{}", keccak256(c.summary.as_bytes())),
            summary: serde_json::from_str(&c.summary).unwrap_or(Value::Null),
            run: c.run,
            metered: c.metered.to_string(),
            amount: c.amount.to_string(),
            payment_id: c.payment_id,
            error: c.error_code,
            created_at: c.created_at,
        })
        .collect())
}

/// The wallet's `sessionState` of session `id` at the latest block.
pub(super) async fn session_state(
    app: &App,
    id: U256,
) -> Result<<ISessionWallet::sessionStateCall as alloy_sol_types::SolCall>::Return, Error> {
    let call = ISessionWallet::sessionStateCall { sessionId: id };
    Ok(app.client.view(None, app.contracts.wallet, call).await?)
}

/// Session `id` if `host` prepared it (another host's id is not found).
pub async fn host_session(store: &Store, host: &Host, id: &str) -> Result<SessionRow, Error> {
    let id = crate::kernel::json::parse_session_id(id).ok_or(Error::NotFound)?;
    store
        .session(&session_id_text(id), Some(&host.id))
        .await?
        .ok_or(Error::NotFound)
}
