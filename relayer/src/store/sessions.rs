//! Sessions: prepared, opened, their transactions, capability tokens and heartbeats.

use alloy_primitives::Address;
use sqlx::any::AnyRow;
use sqlx::Row;

use super::{parsed, DbTx, SealedKeyRow, Store, StoreError, TxStatus};

/// Where a session's opening is (its state on chain, revoked or closed, is read from the
/// chain).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OpenStatus {
    /// Its terms wait for the owner's signature.
    Prepared,
    /// Its open is sent, not yet mined.
    Opening,
    /// Open on chain: its capability token works.
    Open,
    /// Its open was mined and reverted.
    Failed,
}

impl OpenStatus {
    /// The stored (and answered) name.
    pub fn as_str(self) -> &'static str {
        match self {
            OpenStatus::Prepared => "prepared",
            OpenStatus::Opening => "opening",
            OpenStatus::Open => "open",
            OpenStatus::Failed => "failed",
        }
    }

    fn parse(s: &str) -> Result<Self, StoreError> {
        Ok(match s {
            "prepared" => OpenStatus::Prepared,
            "opening" => OpenStatus::Opening,
            "open" => OpenStatus::Open,
            "failed" => OpenStatus::Failed,
            other => return Err(StoreError::Corrupt(format!("session status {other:?}"))),
        })
    }
}

impl std::fmt::Display for OpenStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A session as the relayer keeps it (its on-chain state is read from the chain).
#[derive(Clone, Debug)]
pub struct SessionRow {
    /// The on-chain session id (0x + 64 hex).
    pub id: String,
    /// The host that prepared it.
    pub host_id: String,
    /// The id `prepare` answered with.
    pub prepared_id: String,
    /// The owner's address.
    pub owner: Address,
    /// The custodial session key's address.
    pub session_key: Address,
    /// The relayer signer it is pinned to (its lease keeper).
    pub signer: Address,
    /// The `OpenSession` terms, JSON.
    pub terms: String,
    /// The sandbox provider the host named.
    pub provider: Option<String>,
    /// The sandbox the host named.
    pub sandbox_id: Option<String>,
    /// Where its opening is.
    pub status: OpenStatus,
    /// The transaction that opens it.
    pub open_transaction: Option<i64>,
    /// SHA-256 of the capability token.
    pub capability_hash: Option<String>,
    /// When the host revoked the capability token.
    pub capability_revoked_at: Option<i64>,
    /// `expiresAt` of the terms (unix seconds).
    pub expires_at: i64,
    /// The last lease renewal the relayer sent.
    pub lease_transaction: Option<i64>,
    /// The sandbox's last heartbeat (unix ms).
    pub last_heartbeat_at: Option<i64>,
    /// The revocation the relayer sent.
    pub revoke_transaction: Option<i64>,
    /// The close the relayer sent.
    pub close_transaction: Option<i64>,
    /// When it was prepared (unix ms).
    pub created_at: i64,
    /// `running`, `paused` or `terminated`, as lifecycle events reported it.
    pub sandbox_state: Option<String>,
    /// The provider's time of the event that set it (unix seconds).
    pub sandbox_state_at: Option<i64>,
    /// Whether the relayer is to revoke (and close) it: its sandbox terminated.
    pub winding_down: WindDown,
}

/// How the relayer winds a session down (`sessions.winding_down`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindDown {
    /// It does not (0).
    No,
    /// Revoke, then close (1).
    Close,
    /// Revoke only (2).
    Revoke,
}

impl WindDown {
    /// Its value in the column.
    pub fn code(self) -> i64 {
        match self {
            WindDown::No => 0,
            WindDown::Close => 1,
            WindDown::Revoke => 2,
        }
    }

    fn of(code: i64) -> Self {
        match code {
            1 => WindDown::Close,
            2 => WindDown::Revoke,
            _ => WindDown::No,
        }
    }
}

/// A session to record at `prepare`.
pub struct NewSession<'a> {
    /// The on-chain id it will have.
    pub id: &'a str,
    /// The host preparing it.
    pub host_id: &'a str,
    /// The id handed back to the host.
    pub prepared_id: &'a str,
    /// The owner.
    pub owner: &'a str,
    /// The session key's address.
    pub session_key: &'a str,
    /// The signer it is pinned to.
    pub signer: &'a str,
    /// The terms, JSON.
    pub terms: &'a str,
    /// The provider named.
    pub provider: Option<&'a str>,
    /// The sandbox named.
    pub sandbox_id: Option<&'a str>,
    /// `expiresAt` (unix seconds).
    pub expires_at: i64,
}

/// Which of a session's transactions a column holds.
#[derive(Clone, Copy, Debug)]
pub enum SessionTx {
    /// `lease_transaction`.
    Lease,
    /// `revoke_transaction`.
    Revoke,
    /// `close_transaction`.
    Close,
}

impl SessionTx {
    fn column(self) -> &'static str {
        match self {
            SessionTx::Lease => "lease_transaction",
            SessionTx::Revoke => "revoke_transaction",
            SessionTx::Close => "close_transaction",
        }
    }
}

pub(super) const SESSION_COLUMNS: &str =
    "id, host_id, prepared_id, owner, session_key, signer, terms, \
    provider, sandbox_id, status, open_transaction, capability_hash, capability_revoked_at, \
    expires_at, lease_transaction, last_heartbeat_at, revoke_transaction, close_transaction, \
    created_at, sandbox_state, sandbox_state_at, winding_down";

pub(super) fn session_row(r: &AnyRow) -> Result<SessionRow, StoreError> {
    Ok(SessionRow {
        id: r.try_get("id")?,
        host_id: r.try_get("host_id")?,
        prepared_id: r.try_get("prepared_id")?,
        owner: parsed(r, "owner")?,
        session_key: parsed(r, "session_key")?,
        signer: parsed(r, "signer")?,
        terms: r.try_get("terms")?,
        provider: r.try_get("provider")?,
        sandbox_id: r.try_get("sandbox_id")?,
        status: OpenStatus::parse(&r.try_get::<String, _>("status")?)?,
        open_transaction: r.try_get("open_transaction")?,
        capability_hash: r.try_get("capability_hash")?,
        capability_revoked_at: r.try_get("capability_revoked_at")?,
        expires_at: r.try_get("expires_at")?,
        lease_transaction: r.try_get("lease_transaction")?,
        last_heartbeat_at: r.try_get("last_heartbeat_at")?,
        revoke_transaction: r.try_get("revoke_transaction")?,
        close_transaction: r.try_get("close_transaction")?,
        created_at: r.try_get("created_at")?,
        sandbox_state: r.try_get("sandbox_state")?,
        sandbox_state_at: r.try_get("sandbox_state_at")?,
        winding_down: WindDown::of(r.try_get("winding_down")?),
    })
}

impl Store {
    /// Records a prepared session with its sealed custodial key (none when the sandbox holds
    /// its own), together.
    pub async fn insert_prepared_session(
        &self,
        key: Option<&SealedKeyRow>,
        s: &NewSession<'_>,
        now: i64,
    ) -> Result<(), StoreError> {
        let mut db = self.begin().await?;
        if let Some(key) = key {
            Self::insert_session_key_in(&mut db, key, now).await?;
        }
        sqlx::query(
            "INSERT INTO sessions (id, host_id, prepared_id, owner, session_key, signer, terms, \
             provider, sandbox_id, status, expires_at, next_intent_nonce, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'prepared', $10, 0, $11)",
        )
        .bind(s.id)
        .bind(s.host_id)
        .bind(s.prepared_id)
        .bind(s.owner)
        .bind(s.session_key)
        .bind(s.signer)
        .bind(s.terms)
        .bind(s.provider)
        .bind(s.sandbox_id)
        .bind(s.expires_at)
        .bind(now)
        .execute(&mut *db)
        .await?;
        db.commit().await?;
        Ok(())
    }

    /// The session with this prepared id (its approval link), whoever prepared it.
    pub async fn session_by_prepared_id(
        &self,
        prepared_id: &str,
    ) -> Result<Option<SessionRow>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE prepared_id = $1"
        ))
        .bind(prepared_id)
        .fetch_optional(&self.read)
        .await?;
        row.as_ref().map(session_row).transpose()
    }

    /// `host_id`'s session with this prepared id.
    pub async fn prepared_session(
        &self,
        host_id: &str,
        prepared_id: &str,
    ) -> Result<Option<SessionRow>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE prepared_id = $1 AND host_id = $2"
        ))
        .bind(prepared_id)
        .bind(host_id)
        .fetch_optional(&self.read)
        .await?;
        row.as_ref().map(session_row).transpose()
    }

    /// The session `id`, if `host_id` (when given) prepared it.
    pub async fn session(
        &self,
        id: &str,
        host_id: Option<&str>,
    ) -> Result<Option<SessionRow>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE id = $1 AND ($2 IS NULL OR host_id = $2)"
        ))
        .bind(id)
        .bind(host_id)
        .fetch_optional(&self.read)
        .await?;
        row.as_ref().map(session_row).transpose()
    }

    /// The session whose capability token hashes to `hash`.
    pub async fn session_by_capability(
        &self,
        hash: &str,
    ) -> Result<Option<SessionRow>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE capability_hash = $1"
        ))
        .bind(hash)
        .fetch_optional(&self.read)
        .await?;
        row.as_ref().map(session_row).transpose()
    }

    /// `host_id`'s sessions, newest first, optionally only one provider's / sandbox's, at most
    /// `limit`, created before `before` (unix ms; paging).
    pub async fn sessions(
        &self,
        host_id: &str,
        provider: Option<&str>,
        sandbox_id: Option<&str>,
        before: i64,
        limit: i64,
    ) -> Result<Vec<SessionRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE host_id = $1 \
             AND ($2 IS NULL OR provider = $2) AND ($3 IS NULL OR sandbox_id = $3) \
             AND created_at < $4 ORDER BY created_at DESC, id LIMIT $5"
        ))
        .bind(host_id)
        .bind(provider)
        .bind(sandbox_id)
        .bind(before)
        .bind(limit)
        .fetch_all(&self.read)
        .await?;
        rows.iter().map(session_row).collect()
    }

    /// Marks a prepared session as opening by transaction `tx_id` with the capability token
    /// hashing to `capability_hash` (none yet when the owner opened it from the approval page:
    /// the host registers for it), inside `db`. `false` when it was not `prepared` (another
    /// request opened it first).
    pub async fn set_session_opening(
        db: &mut DbTx,
        id: &str,
        tx_id: Option<i64>,
        capability_hash: Option<&str>,
    ) -> Result<bool, StoreError> {
        let status = match tx_id {
            Some(_) => OpenStatus::Opening,
            None => OpenStatus::Open,
        };
        let n = sqlx::query(
            "UPDATE sessions SET status = $1, open_transaction = $2, capability_hash = $3 \
             WHERE id = $4 AND status = 'prepared'",
        )
        .bind(status.as_str())
        .bind(tx_id)
        .bind(capability_hash)
        .bind(id)
        .execute(&mut **db)
        .await?
        .rows_affected();
        Ok(n == 1)
    }

    /// Sessions being opened whose open transaction is mined or failed: `(id, host id,
    /// transaction status, receipt status)`.
    pub async fn opened_sessions(
        &self,
    ) -> Result<Vec<(String, String, TxStatus, Option<i64>)>, StoreError> {
        let rows = sqlx::query(
            "SELECT s.id, s.host_id, t.status, t.receipt_status FROM sessions s \
             JOIN transactions t ON t.id = s.open_transaction \
             WHERE s.status = 'opening' AND t.status IN ('mined', 'confirmed', 'failed')",
        )
        .fetch_all(&self.read)
        .await?;
        rows.iter()
            .map(|r| {
                let tx = TxStatus::parse(&r.try_get::<String, _>(2)?)?;
                Ok((r.try_get(0)?, r.try_get(1)?, tx, r.try_get(3)?))
            })
            .collect()
    }

    /// Sessions whose revocation (or close) the relayer sent, is mined or failed, and was not
    /// read yet: `(id, host id, transaction id)`.
    pub async fn unsettled_session_transactions(
        &self,
        which: SessionTx,
    ) -> Result<Vec<(String, String, i64)>, StoreError> {
        let (column, settled) = match which {
            SessionTx::Revoke => ("revoke_transaction", "revoke_settled"),
            SessionTx::Close => ("close_transaction", "close_settled"),
            SessionTx::Lease => return Ok(Vec::new()),
        };
        let rows = sqlx::query(&format!(
            "SELECT s.id, s.host_id, s.{column} FROM sessions s \
             JOIN transactions t ON t.id = s.{column} \
             WHERE s.{settled} = 0 AND t.status IN ('mined', 'confirmed', 'failed')"
        ))
        .fetch_all(&self.read)
        .await?;
        rows.iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
            .collect()
    }

    /// Marks a session's revocation (or close) as read.
    pub async fn settle_session_transaction(
        &self,
        id: &str,
        which: SessionTx,
    ) -> Result<(), StoreError> {
        let settled = match which {
            SessionTx::Revoke => "revoke_settled",
            SessionTx::Close => "close_settled",
            SessionTx::Lease => return Ok(()),
        };
        sqlx::query(&format!("UPDATE sessions SET {settled} = 1 WHERE id = $1"))
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The host of session `id`.
    pub async fn session_host(&self, id: &str) -> Result<Option<String>, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT host_id FROM sessions WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.read)
                .await?,
        )
    }

    /// Sets a session's status.
    pub async fn set_session_status(&self, id: &str, status: OpenStatus) -> Result<(), StoreError> {
        sqlx::query("UPDATE sessions SET status = $1 WHERE id = $2")
            .bind(status.as_str())
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Records the transaction of a lease renewal, revocation or close, inside `db`.
    pub async fn set_session_transaction(
        db: &mut DbTx,
        id: &str,
        which: SessionTx,
        tx_id: i64,
    ) -> Result<(), StoreError> {
        // A new revocation or close has not been read yet.
        let unread = match which {
            SessionTx::Lease => "",
            SessionTx::Revoke => ", revoke_settled = 0",
            SessionTx::Close => ", close_settled = 0",
        };
        sqlx::query(&format!(
            "UPDATE sessions SET {} = $1{unread} WHERE id = $2",
            which.column()
        ))
        .bind(tx_id)
        .bind(id)
        .execute(&mut **db)
        .await?;
        Ok(())
    }

    /// Gives a session opened from its approval page the capability token hashing to
    /// `capability_hash`: `false` when it has one already (or never was opened that way).
    pub async fn issue_capability(
        &self,
        id: &str,
        capability_hash: &str,
    ) -> Result<bool, StoreError> {
        let n = sqlx::query(
            "UPDATE sessions SET capability_hash = $1 WHERE id = $2 AND capability_hash IS NULL \
             AND open_transaction IS NOT NULL AND capability_revoked_at IS NULL",
        )
        .bind(capability_hash)
        .bind(id)
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(n == 1)
    }

    /// Revokes a session's capability token (the first revocation's time stays).
    pub async fn revoke_capability(&self, id: &str, now: i64) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE sessions SET capability_revoked_at = $1 \
             WHERE id = $2 AND capability_revoked_at IS NULL",
        )
        .bind(now)
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Records a heartbeat.
    pub async fn heartbeat(&self, id: &str, now: i64) -> Result<(), StoreError> {
        sqlx::query("UPDATE sessions SET last_heartbeat_at = $1 WHERE id = $2")
            .bind(now)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_statuses_are_stored_by_name_and_others_are_corrupt() {
        for s in [
            OpenStatus::Prepared,
            OpenStatus::Opening,
            OpenStatus::Open,
            OpenStatus::Failed,
        ] {
            assert_eq!(OpenStatus::parse(s.as_str()).unwrap(), s);
        }
        assert!(matches!(
            OpenStatus::parse("OPEN"),
            Err(StoreError::Corrupt(_))
        ));
    }
}
