//! Sessions, their payments and provenance records.

use sqlx::any::AnyRow;
use sqlx::Row;

use super::{
    placeholders, take_numbers, Counter, DbTx, SealedKeyRow, Store, StoreError, ROWS_PER_INSERT,
};

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
    pub owner: String,
    /// The custodial session key's address.
    pub session_key: String,
    /// The relayer signer it is pinned to (its lease keeper).
    pub signer: String,
    /// The `OpenSession` terms, JSON.
    pub terms: String,
    /// The sandbox provider the host named.
    pub provider: Option<String>,
    /// The sandbox the host named.
    pub sandbox_id: Option<String>,
    /// `prepared`, `opening`, `open` or `failed`.
    pub status: String,
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

/// A payment to record with its transaction.
pub struct NewPayment<'a> {
    /// `pay_…`.
    pub id: &'a str,
    /// Its session.
    pub session_id: &'a str,
    /// The payee.
    pub to: &'a str,
    /// Base units, decimal.
    pub amount: &'a str,
    /// The purpose hash.
    pub purpose: &'a str,
    /// The intent's nonce, decimal.
    pub intent_nonce: &'a str,
    /// The intent's deadline (unix seconds).
    pub deadline: i64,
    /// Whether the simulation executed it (rather than making it pending).
    pub expect_executed: bool,
    /// The engine's transaction that carries it.
    pub transaction_id: i64,
    /// The request's idempotency key, if it had one.
    pub request_key: Option<&'a str>,
}

/// An accepted payment whose transaction the engine has not seen mined.
#[derive(Clone, Debug)]
pub struct Unmined {
    /// Its session.
    pub session_id: String,
    /// Base units, decimal.
    pub amount: String,
    /// Whether the simulation executed it (rather than making it pending).
    pub expect_executed: bool,
    /// Its transaction's nonce (of the session's signer).
    pub tx_nonce: i64,
    /// The intent's nonce, decimal.
    pub intent_nonce: String,
}

/// A payment with its transaction's progress.
#[derive(Clone, Debug, Default)]
pub struct PaymentRow {
    /// `pay_…`.
    pub id: String,
    /// Its session.
    pub session_id: String,
    /// The payee.
    pub to: String,
    /// Base units, decimal.
    pub amount: String,
    /// The purpose hash.
    pub purpose: String,
    /// The intent's nonce.
    pub intent_nonce: String,
    /// The intent's deadline (unix seconds).
    pub deadline: i64,
    /// Whether the simulation at acceptance executed it.
    pub expect_executed: bool,
    /// The engine's transaction.
    pub transaction_id: i64,
    /// What the receipt said: executed, pending, approved, rejected, reverted.
    pub outcome: Option<String>,
    /// The receipt registry's id for an executed payment.
    pub receipt_id: Option<String>,
    /// The wallet's pending id for a co-signed one.
    pub pending_id: Option<String>,
    /// The contract error a failed one reverted with.
    pub error_code: Option<String>,
    /// Its arguments, JSON.
    pub error_details: Option<String>,
    /// When it was accepted (unix ms).
    pub created_at: i64,
    /// The transaction's status (signed, submitted, mined, confirmed, failed).
    pub tx_status: String,
    /// The mined attempt's hash.
    pub tx_hash: Option<String>,
    /// Its block.
    pub block_number: Option<i64>,
    /// The transaction's receipt status (1 ok, 0 reverted).
    pub receipt_status: Option<i64>,
}

impl PaymentRow {
    /// Its status, from its outcome and its transaction's progress.
    pub fn status(&self) -> &'static str {
        let p = self;
        match p.outcome.as_deref() {
            Some("executed" | "approved") if p.tx_status == "confirmed" => "confirmed",
            Some("executed" | "approved") => "mined",
            Some("pending") => "pending_approval",
            Some("rejected") => "rejected",
            Some(_) => match p.error_code.as_deref() {
                Some("WalletDeadlinePassed" | "WalletPendingExpired") => "expired",
                _ => "failed",
            },
            None => match p.tx_status.as_str() {
                "signed" => "queued",
                "submitted" => "submitted",
                "failed" => "failed",
                _ => "mined",
            },
        }
    }
}

/// A provenance record with its transaction's progress.
#[derive(Clone, Debug)]
pub struct ProvenanceRow {
    /// `prov_…`.
    pub id: String,
    /// Its session.
    pub session_id: String,
    /// The record as submitted, JSON.
    pub record: String,
    /// The engine's transaction.
    pub transaction_id: i64,
    /// `recorded` or `reverted`, once mined.
    pub outcome: Option<String>,
    /// The registry's record id.
    pub record_id: Option<String>,
    /// The contract error it reverted with.
    pub error_code: Option<String>,
    /// Its arguments, JSON.
    pub error_details: Option<String>,
    /// When it was accepted (unix ms).
    pub created_at: i64,
    /// The transaction's status.
    pub tx_status: String,
    /// The mined attempt's hash.
    pub tx_hash: Option<String>,
    /// Its block.
    pub block_number: Option<i64>,
    /// The transaction's receipt status.
    pub receipt_status: Option<i64>,
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
        owner: r.try_get("owner")?,
        session_key: r.try_get("session_key")?,
        signer: r.try_get("signer")?,
        terms: r.try_get("terms")?,
        provider: r.try_get("provider")?,
        sandbox_id: r.try_get("sandbox_id")?,
        status: r.try_get("status")?,
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

const PAYMENT_COLUMNS: &str = "p.id, p.session_id, p.to_address, p.amount, p.purpose, \
    p.intent_nonce, p.deadline, p.expect_executed, p.transaction_id, p.outcome, p.receipt_id, \
    p.pending_id, p.error_code, p.error_details, p.created_at, t.status AS tx_status, \
    t.mined_hash, t.block_number, t.receipt_status";

fn payment_row(r: &AnyRow) -> Result<PaymentRow, StoreError> {
    Ok(PaymentRow {
        id: r.try_get("id")?,
        session_id: r.try_get("session_id")?,
        to: r.try_get("to_address")?,
        amount: r.try_get("amount")?,
        purpose: r.try_get("purpose")?,
        intent_nonce: r.try_get("intent_nonce")?,
        deadline: r.try_get("deadline")?,
        expect_executed: r.try_get::<i64, _>("expect_executed")? != 0,
        transaction_id: r.try_get("transaction_id")?,
        outcome: r.try_get("outcome")?,
        receipt_id: r.try_get("receipt_id")?,
        pending_id: r.try_get("pending_id")?,
        error_code: r.try_get("error_code")?,
        error_details: r.try_get("error_details")?,
        created_at: r.try_get("created_at")?,
        tx_status: r.try_get("tx_status")?,
        tx_hash: r.try_get("mined_hash")?,
        block_number: r.try_get("block_number")?,
        receipt_status: r.try_get("receipt_status")?,
    })
}

const PROVENANCE_COLUMNS: &str = "p.id, p.session_id, p.record, p.transaction_id, p.outcome, \
    p.record_id, p.error_code, p.error_details, p.created_at, t.status AS tx_status, \
    t.mined_hash, t.block_number, t.receipt_status";

fn provenance_row(r: &AnyRow) -> Result<ProvenanceRow, StoreError> {
    Ok(ProvenanceRow {
        id: r.try_get("id")?,
        session_id: r.try_get("session_id")?,
        record: r.try_get("record")?,
        transaction_id: r.try_get("transaction_id")?,
        outcome: r.try_get("outcome")?,
        record_id: r.try_get("record_id")?,
        error_code: r.try_get("error_code")?,
        error_details: r.try_get("error_details")?,
        created_at: r.try_get("created_at")?,
        tx_status: r.try_get("tx_status")?,
        tx_hash: r.try_get("mined_hash")?,
        block_number: r.try_get("block_number")?,
        receipt_status: r.try_get("receipt_status")?,
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
    /// hashing to `capability_hash`, inside `db`. `false` when it was not `prepared` (another
    /// request opened it first).
    pub async fn set_session_opening(
        db: &mut DbTx,
        id: &str,
        tx_id: Option<i64>,
        capability_hash: &str,
    ) -> Result<bool, StoreError> {
        let status = if tx_id.is_some() { "opening" } else { "open" };
        let n = sqlx::query(
            "UPDATE sessions SET status = $1, open_transaction = $2, capability_hash = $3 \
             WHERE id = $4 AND status = 'prepared'",
        )
        .bind(status)
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
    ) -> Result<Vec<(String, String, String, Option<i64>)>, StoreError> {
        let rows = sqlx::query(
            "SELECT s.id, s.host_id, t.status, t.receipt_status FROM sessions s \
             JOIN transactions t ON t.id = s.open_transaction \
             WHERE s.status = 'opening' AND t.status IN ('mined', 'confirmed', 'failed')",
        )
        .fetch_all(&self.read)
        .await?;
        rows.iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, r.try_get(3)?)))
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
    pub async fn set_session_status(&self, id: &str, status: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE sessions SET status = $1 WHERE id = $2")
            .bind(status)
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

    /// Takes the next intent nonce of each of `sessions` (a session named several times gets
    /// consecutive ones), inside `db`.
    pub async fn take_intent_nonces(
        db: &mut DbTx,
        sessions: &[&str],
    ) -> Result<Vec<u64>, StoreError> {
        let nonces = take_numbers(db, Counter::IntentNonce, sessions).await?;
        Ok(nonces.into_iter().map(|n| n as u64).collect())
    }

    /// Records payments, inside `db` (with their transactions).
    pub async fn insert_payments(
        db: &mut DbTx,
        payments: &[NewPayment<'_>],
        now: i64,
    ) -> Result<(), StoreError> {
        for chunk in payments.chunks(ROWS_PER_INSERT) {
            let sql = format!(
                "INSERT INTO payments (id, session_id, to_address, amount, purpose, intent_nonce, \
                 deadline, expect_executed, transaction_id, created_at, request_key) VALUES {}",
                placeholders(db, chunk.len(), 11)
            );
            let mut q = sqlx::query(&sql);
            for p in chunk {
                q = q
                    .bind(p.id)
                    .bind(p.session_id)
                    .bind(p.to)
                    .bind(p.amount)
                    .bind(p.purpose)
                    .bind(p.intent_nonce)
                    .bind(p.deadline)
                    .bind(i64::from(p.expect_executed))
                    .bind(p.transaction_id)
                    .bind(now)
                    .bind(p.request_key);
            }
            q.execute(&mut **db).await?;
        }
        Ok(())
    }

    /// The payment a request with idempotency key `request_key` made.
    pub async fn payment_by_request_key(
        &self,
        request_key: &str,
    ) -> Result<Option<PaymentRow>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {PAYMENT_COLUMNS} FROM payments p JOIN transactions t ON t.id = p.transaction_id \
             WHERE p.request_key = $1"
        ))
        .bind(request_key)
        .fetch_optional(&self.read)
        .await?;
        row.as_ref().map(payment_row).transpose()
    }

    /// The provenance record a request with idempotency key `request_key` made.
    pub async fn provenance_by_request_key(
        &self,
        request_key: &str,
    ) -> Result<Option<ProvenanceRow>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {PROVENANCE_COLUMNS} FROM provenance p \
             JOIN transactions t ON t.id = p.transaction_id WHERE p.request_key = $1"
        ))
        .bind(request_key)
        .fetch_optional(&self.read)
        .await?;
        row.as_ref().map(provenance_row).transpose()
    }

    /// The payment `id` of session `session_id` (when given).
    pub async fn payment(
        &self,
        id: &str,
        session_id: Option<&str>,
    ) -> Result<Option<PaymentRow>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {PAYMENT_COLUMNS} FROM payments p JOIN transactions t ON t.id = p.transaction_id \
             WHERE p.id = $1 AND ($2 IS NULL OR p.session_id = $2)"
        ))
        .bind(id)
        .bind(session_id)
        .fetch_optional(&self.read)
        .await?;
        row.as_ref().map(payment_row).transpose()
    }

    /// A session's payments, newest first.
    pub async fn session_payments(
        &self,
        session_id: &str,
        limit: i64,
    ) -> Result<Vec<PaymentRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {PAYMENT_COLUMNS} FROM payments p JOIN transactions t ON t.id = p.transaction_id \
             WHERE p.session_id = $1 ORDER BY p.created_at DESC, p.id LIMIT $2"
        ))
        .bind(session_id)
        .bind(limit)
        .fetch_all(&self.read)
        .await?;
        rows.iter().map(payment_row).collect()
    }

    /// The accepted payments of `sessions` whose transaction the engine has not seen mined, in
    /// the order of their transactions' nonces. Some may be on chain already; the caller asks
    /// the chain.
    pub async fn unmined_payments(&self, sessions: &[&str]) -> Result<Vec<Unmined>, StoreError> {
        if sessions.is_empty() {
            return Ok(Vec::new());
        }
        let list = (1..=sessions.len())
            .map(|i| format!("${i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "SELECT p.session_id, p.amount, p.expect_executed, t.nonce, p.intent_nonce \
             FROM payments p JOIN transactions t ON t.id = p.transaction_id \
             WHERE p.session_id IN ({list}) AND t.status IN ('signed', 'submitted') \
             ORDER BY t.nonce"
        );
        let mut q = sqlx::query(&sql);
        for s in sessions {
            q = q.bind(*s);
        }
        let rows = q.fetch_all(&self.read).await?;
        rows.iter()
            .map(|r| {
                Ok(Unmined {
                    session_id: r.try_get(0)?,
                    amount: r.try_get(1)?,
                    expect_executed: r.try_get::<i64, _>(2)? != 0,
                    tx_nonce: r.try_get(3)?,
                    intent_nonce: r.try_get(4)?,
                })
            })
            .collect()
    }

    /// How many payments are in each combination of what decides their status (a row with
    /// only those fields filled, and the count).
    pub async fn payment_status_counts(&self) -> Result<Vec<(PaymentRow, i64)>, StoreError> {
        let rows = sqlx::query(
            "SELECT p.outcome, t.status, p.error_code, COUNT(*) FROM payments p \
             JOIN transactions t ON t.id = p.transaction_id \
             GROUP BY p.outcome, t.status, p.error_code",
        )
        .fetch_all(&self.read)
        .await?;
        rows.iter()
            .map(|r| {
                let row = PaymentRow {
                    outcome: r.try_get(0)?,
                    tx_status: r.try_get(1)?,
                    error_code: r.try_get(2)?,
                    ..PaymentRow::default()
                };
                Ok((row, r.try_get(3)?))
            })
            .collect()
    }

    /// Payments whose transaction is mined or failed and whose outcome is not read yet.
    pub async fn unsettled_payments(&self, limit: i64) -> Result<Vec<PaymentRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {PAYMENT_COLUMNS} FROM payments p JOIN transactions t ON t.id = p.transaction_id \
             WHERE p.outcome IS NULL AND t.status IN ('mined', 'confirmed', 'failed') \
             ORDER BY p.transaction_id LIMIT $1"
        ))
        .bind(limit)
        .fetch_all(&self.read)
        .await?;
        rows.iter().map(payment_row).collect()
    }

    /// Records what a payment's receipt said.
    pub async fn set_payment_outcome(
        &self,
        id: &str,
        outcome: &str,
        receipt_id: Option<&str>,
        pending_id: Option<&str>,
        error: Option<(&str, &str)>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE payments SET outcome = $1, receipt_id = COALESCE($2, receipt_id), \
             pending_id = COALESCE($3, pending_id), error_code = $4, error_details = $5 \
             WHERE id = $6",
        )
        .bind(outcome)
        .bind(receipt_id)
        .bind(pending_id)
        .bind(error.map(|e| e.0))
        .bind(error.map(|e| e.1))
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The payment that went pending as `pending_id` in session `session_id`.
    pub async fn payment_by_pending(
        &self,
        session_id: &str,
        pending_id: &str,
    ) -> Result<Option<PaymentRow>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {PAYMENT_COLUMNS} FROM payments p JOIN transactions t ON t.id = p.transaction_id \
             WHERE p.session_id = $1 AND p.pending_id = $2"
        ))
        .bind(session_id)
        .bind(pending_id)
        .fetch_optional(&self.read)
        .await?;
        row.as_ref().map(payment_row).transpose()
    }

    /// Records the transaction carrying the owner's decision on payment `id`, inside `db`.
    pub async fn set_payment_decision(
        db: &mut DbTx,
        id: &str,
        tx_id: i64,
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE payments SET decision_transaction = $1 WHERE id = $2")
            .bind(tx_id)
            .bind(id)
            .execute(&mut **db)
            .await?;
        Ok(())
    }

    /// Forgets a decision that did not land (so another may be sent).
    pub async fn clear_payment_decision(&self, id: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE payments SET decision_transaction = NULL WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Pending payments whose decision transaction is mined or failed:
    /// `(payment id, pending id, decision transaction id)`.
    pub async fn decided_payments(&self) -> Result<Vec<(String, String, i64)>, StoreError> {
        let rows = sqlx::query(
            "SELECT p.id, p.pending_id, p.decision_transaction FROM payments p \
             JOIN transactions t ON t.id = p.decision_transaction \
             WHERE p.outcome = 'pending' AND t.status IN ('mined', 'confirmed', 'failed')",
        )
        .fetch_all(&self.read)
        .await?;
        rows.iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
            .collect()
    }

    /// Records a provenance record, inside `db` (with its transaction).
    pub async fn insert_provenance(
        db: &mut DbTx,
        id: &str,
        session_id: &str,
        record: &str,
        transaction_id: i64,
        request_key: Option<&str>,
        now: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO provenance (id, session_id, record, transaction_id, request_key, \
             created_at) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(id)
        .bind(session_id)
        .bind(record)
        .bind(transaction_id)
        .bind(request_key)
        .bind(now)
        .execute(&mut **db)
        .await?;
        Ok(())
    }

    /// The provenance record `id` of session `session_id` (when given).
    pub async fn provenance(
        &self,
        id: &str,
        session_id: Option<&str>,
    ) -> Result<Option<ProvenanceRow>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {PROVENANCE_COLUMNS} FROM provenance p \
             JOIN transactions t ON t.id = p.transaction_id \
             WHERE p.id = $1 AND ($2 IS NULL OR p.session_id = $2)"
        ))
        .bind(id)
        .bind(session_id)
        .fetch_optional(&self.read)
        .await?;
        row.as_ref().map(provenance_row).transpose()
    }

    /// Provenance records whose transaction is mined or failed and whose outcome is unread.
    pub async fn unsettled_provenance(&self, limit: i64) -> Result<Vec<ProvenanceRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {PROVENANCE_COLUMNS} FROM provenance p \
             JOIN transactions t ON t.id = p.transaction_id \
             WHERE p.outcome IS NULL AND t.status IN ('mined', 'confirmed', 'failed') \
             ORDER BY p.transaction_id LIMIT $1"
        ))
        .bind(limit)
        .fetch_all(&self.read)
        .await?;
        rows.iter().map(provenance_row).collect()
    }

    /// Records what a provenance record's receipt said.
    pub async fn set_provenance_outcome(
        &self,
        id: &str,
        outcome: &str,
        record_id: Option<&str>,
        error: Option<(&str, &str)>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE provenance SET outcome = $1, record_id = $2, error_code = $3, \
             error_details = $4 WHERE id = $5",
        )
        .bind(outcome)
        .bind(record_id)
        .bind(error.map(|e| e.0))
        .bind(error.map(|e| e.1))
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
