//! A session's lease: the sandbox's heartbeats, and the relayer (its lease keeper) renewing
//! the lease on chain once half of it is gone.

use alloy_primitives::{Bytes, U256};
use alloy_sol_types::SolCall;
use bursar_bindings::wallet::ISessionWallet;
use serde::Serialize;
use utoipa::ToSchema;

use super::view::session_state;

use crate::kernel::session::{not_open, parse_id, send, stored_terms};
use crate::kernel::{App, Error};
use crate::store::{now_ms, OpenStatus, SessionRow, SessionTx, TxStatus};

/// What a heartbeat did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Heartbeat {
    /// The session.
    pub session_id: String,
    /// The lease's expiry on chain now (unix seconds; 0 without a lease).
    pub lease_expires_at: u64,
    /// Whether a renewal was sent (half the lease or more was gone).
    pub renewal_submitted: bool,
    /// The sandbox's state as lifecycle events reported it: while it is `paused` or
    /// `terminated` the lease is not renewed.
    pub sandbox_state: Option<String>,
}

/// Records the sandbox's heartbeat and, once half the lease or less is left, renews the lease
/// on chain (one renewal in flight at a time) — unless the sandbox is reported paused or
/// terminated.
pub async fn heartbeat(app: &App, row: &SessionRow) -> Result<Heartbeat, Error> {
    if row.status != OpenStatus::Open {
        return Err(not_open(row));
    }
    app.store.heartbeat(&row.id, now_ms()).await?;
    let held = matches!(row.sandbox_state.as_deref(), Some("paused" | "terminated"));
    let (lease_expires_at, renewal_submitted) = if held {
        let state = session_state(app, parse_id(&row.id)?).await?;
        (state._6, false)
    } else {
        renew_lease(app, row).await?
    };
    Ok(Heartbeat {
        session_id: row.id.clone(),
        lease_expires_at,
        renewal_submitted,
        sandbox_state: row.sandbox_state.clone(),
    })
}

/// Whether a lease of `lease_seconds` with `left` seconds to run is due for renewal: once half
/// of it or less is left (half exactly too: blocks share seconds on Arbitrum's clock, so a
/// heartbeat within the second after an hour's jump finds exactly half of a two-hour lease
/// left). A session without a lease never is.
fn renewal_due(lease_seconds: u64, left: u64) -> bool {
    lease_seconds > 0 && left <= lease_seconds / 2
}

/// Renews session `row`'s lease on chain once half of it or less is left, or it has lapsed
/// (the keeper may revive it), unless a renewal is in flight. Answers the lease's expiry
/// before the renewal and whether one was sent; the wallet's refusal is the error.
pub async fn renew_lease(app: &App, row: &SessionRow) -> Result<(u64, bool), Error> {
    let session = parse_id(&row.id)?;
    let terms = stored_terms(row)?.terms()?;
    let state = session_state(app, session).await?;
    let lease_expires_at = state._6;
    // The chain's clock, not ours: it is the one the wallet checks the lease against.
    let chain_now: u64 = app.client.latest_block().await?.timestamp.to();
    let left = lease_expires_at.saturating_sub(chain_now);
    let due = renewal_due(terms.leaseSeconds, left);
    let in_flight = match row.lease_transaction {
        Some(tx) => app
            .store
            .transaction(tx)
            .await?
            .is_some_and(|t| matches!(t.status, TxStatus::Signed | TxStatus::Submitted)),
        None => false,
    };
    if !due || in_flight {
        return Ok((lease_expires_at, false));
    }
    let call = ISessionWallet::renewLeaseCall {
        sessionId: session,
        nonce: U256::ZERO,
        deadline: U256::ZERO,
        signature: Bytes::new(),
    };
    // As the keeper the signer renews directly; a refusal (revoked, expired) is the answer.
    app.client
        .view(Some(row.signer), app.contracts.wallet, call.clone())
        .await?;
    send(
        app,
        row,
        app.contracts.wallet,
        call.abi_encode(),
        SessionTx::Lease,
    )
    .await?;
    Ok((lease_expires_at, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_renewed_once_half_of_it_is_gone() {
        let two_hours = 7_200;
        assert!(!renewal_due(two_hours, 7_200), "just renewed");
        assert!(!renewal_due(two_hours, 3_601));
        assert!(renewal_due(two_hours, 3_600), "exactly half left");
        assert!(
            renewal_due(two_hours, 0),
            "lapsed: the keeper may revive it"
        );
        assert!(!renewal_due(0, 0), "no lease, nothing to renew");
        assert!(renewal_due(1, 0));
        assert!(!renewal_due(u64::MAX, u64::MAX));
    }
}
