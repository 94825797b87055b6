//! What every feature reads of a stored session: its id, its signer, its terms; and sending a
//! transaction on its behalf.

use alloy_primitives::{Address, Bytes, U256};
use alloy_sol_types::SolValue;
use bursar_bindings::eip712::OpenSession;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{App, Error};
use crate::engine::submission::Call;
use crate::store::{SessionRow, SessionTx, Store};

/// Gas for calls whose cost does not depend on the caller's data (revoke, close, renew); the
/// devnet measures each under 120,000.
pub(crate) const SMALL_CALL_GAS: u64 = 250_000;

/// The terms as stored: the typed data shown to the owner, the same terms ABI-encoded, and the
/// chain's head when they were prepared (no session with their nonce can have opened before).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StoredTerms {
    pub(crate) typed_data: Value,
    pub(crate) abi: Bytes,
    /// Absent in rows prepared before it was kept: then from block 0.
    #[serde(default)]
    pub(crate) prepared_at_block: u64,
}

impl StoredTerms {
    /// The terms, decoded.
    pub(crate) fn terms(&self) -> Result<OpenSession, Error> {
        OpenSession::abi_decode(&self.abi).map_err(|e| {
            tracing::error!(error = %e, "stored terms do not decode");
            Error::Internal
        })
    }
}

/// The terms a session was prepared with.
pub fn terms_of(row: &SessionRow) -> Result<OpenSession, Error> {
    stored_terms(row)?.terms()
}

/// The terms a session was prepared with, as stored.
pub(crate) fn stored_terms(row: &SessionRow) -> Result<StoredTerms, Error> {
    serde_json::from_str(&row.terms).map_err(|e| {
        tracing::error!(session = %row.id, error = %e, "stored terms do not parse");
        Error::Internal
    })
}

/// Queues `data` to `to` from the session's signer and records it in the session's `which`
/// column, together; returns the transaction's id.
pub(crate) async fn send(
    app: &App,
    row: &SessionRow,
    to: Address,
    data: Vec<u8>,
    which: SessionTx,
) -> Result<i64, Error> {
    let call = Call {
        signer: row.signer,
        to,
        data: data.into(),
        value: U256::ZERO,
        gas_limit: SMALL_CALL_GAS,
    };
    let (mut db, tx_id) = app.queue(&call).await?;
    Store::set_session_transaction(&mut db, &row.id, which, tx_id).await?;
    app.commit(db).await?;
    Ok(tx_id)
}

/// The conflict of acting on a session that is not open.
pub fn not_open(row: &SessionRow) -> Error {
    Error::conflict(
        "session_not_open",
        format!("session {} is {}, not open", row.id, row.status),
    )
}

/// A stored session id as a number.
pub fn parse_id(id: &str) -> Result<U256, Error> {
    super::json::parse_session_id(id).ok_or(Error::Internal)
}
