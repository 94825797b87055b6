//! A session ended on the host's word: revoked at once (its token dead, then the relayer as
//! guardian revokes it on chain) and closed (the rest refunded to the owner).

use alloy_sol_types::SolCall;
use bursar_bindings::wallet::{ISessionWallet, SessionStatus};
use serde::Serialize;
use utoipa::ToSchema;

use super::view::{host_session, session_state};

use crate::hosts::Host;
use crate::kernel::json::Amount;
use crate::kernel::session::{parse_id, send, stored_terms};
use crate::kernel::{App, Error};
use crate::store::{now_ms, SessionTx};

/// What revoking did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Revoked {
    /// The session.
    pub session_id: String,
    /// The capability token is dead (at once).
    pub capability_revoked: bool,
    /// What happened on chain.
    pub on_chain: RevokedOnChain,
    /// The relayer's `revoke` transaction once mined.
    pub transaction_hash: Option<String>,
}

/// What revoking did on chain.
#[derive(Clone, Copy, Debug, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RevokedOnChain {
    /// The relayer's `revoke` is mined.
    Revoked,
    /// Sent, not mined within the wait.
    Submitted,
    /// Revoked or closed on chain already.
    Already,
    /// Never opened on chain.
    NotOpen,
    /// The host named another guardian, who must revoke on chain.
    NotGuardian,
}

/// What closing did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Closing {
    /// The session.
    pub session_id: String,
    /// What goes back to the owner.
    pub refund: Amount,
    /// `closed` once the close is mined, `closing` while it is not (within the wait).
    pub status: ClosingStatus,
    /// The close transaction once mined.
    pub transaction_hash: Option<String>,
}

/// Where a close is.
#[derive(Clone, Copy, Debug, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClosingStatus {
    /// Mined: the refund is paid.
    Closed,
    /// Sent, not yet mined.
    Closing,
}

/// Revokes a session: its capability token at once, and on chain when the relayer is its
/// guardian (waiting, as long as an open does, for that to be mined).
pub async fn revoke(app: &App, host: &Host, id: &str) -> Result<Revoked, Error> {
    let row = host_session(&app.store, host, id).await?;
    app.store.revoke_capability(&row.id, now_ms()).await?;
    let session = parse_id(&row.id)?;
    let terms = stored_terms(&row)?.terms()?;
    let state = session_state(app, session).await?;
    let mut transaction_hash = None;
    let on_chain = if state._0 == SessionStatus::None as u8 {
        RevokedOnChain::NotOpen
    } else if state._0 != SessionStatus::Active as u8 {
        RevokedOnChain::Already
    } else if terms.guardian != row.signer {
        RevokedOnChain::NotGuardian
    } else {
        let call = ISessionWallet::revokeCall { sessionId: session };
        let tx = send(
            app,
            &row,
            app.contracts.wallet,
            call.abi_encode(),
            SessionTx::Revoke,
        )
        .await?;
        transaction_hash = mined(app, tx).await?;
        if transaction_hash.is_some() {
            RevokedOnChain::Revoked
        } else {
            RevokedOnChain::Submitted
        }
    };
    tracing::info!(host = %host.id, session = %row.id, ?on_chain, "session revoked");
    Ok(Revoked {
        session_id: row.id,
        capability_revoked: true,
        on_chain,
        transaction_hash,
    })
}

/// Closes a session on chain (the refund goes to the owner): possible once it is revoked,
/// expired or its lease has lapsed; refused with the wallet's error otherwise. Waits (as long
/// as an open does) for the close to be mined.
pub async fn close(app: &App, host: &Host, id: &str) -> Result<Closing, Error> {
    let row = host_session(&app.store, host, id).await?;
    let call = ISessionWallet::closeCall {
        sessionId: parse_id(&row.id)?,
    };
    let refund = app
        .client
        .view(Some(row.signer), app.contracts.wallet, call.clone())
        .await?;
    app.store.revoke_capability(&row.id, now_ms()).await?;
    let tx = send(
        app,
        &row,
        app.contracts.wallet,
        call.abi_encode(),
        SessionTx::Close,
    )
    .await?;
    tracing::info!(host = %host.id, session = %row.id, "session closing");
    let transaction_hash = mined(app, tx).await?;
    Ok(Closing {
        session_id: row.id,
        refund: Amount(refund),
        status: if transaction_hash.is_some() {
            ClosingStatus::Closed
        } else {
            ClosingStatus::Closing
        },
        transaction_hash,
    })
}

/// The hash of transaction `tx` once mined, waiting at most [`crate::Settings::open_wait`].
async fn mined(app: &App, tx: i64) -> Result<Option<String>, Error> {
    let look = || async {
        let row = app.store.transaction(tx).await?.ok_or(Error::Internal)?;
        let hash = row.mined_hash.filter(|_| row.receipt_status == Some(1));
        Ok(hash.map(|h| h.to_string()))
    };
    app.wait_for(app.settings.open_wait, look).await
}
