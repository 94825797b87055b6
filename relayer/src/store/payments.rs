//! Payments: stored with their transactions, their outcomes and the owner's decisions.

use alloy_primitives::{Address, B256, U256};
use sqlx::any::AnyRow;
use sqlx::Row;

use super::{
    parsed, parsed_opt, placeholders, take_numbers, Counter, DbTx, Store, StoreError, TxStatus,
    ROWS_PER_INSERT,
};

/// A payment to record with its transaction.
pub struct NewPayment<'a> {
    /// `pay_…`.
    pub id: &'a str,
    /// Its session.
    pub session_id: &'a str,
    /// The payee.
    pub to: Address,
    /// Base units.
    pub amount: U256,
    /// The purpose hash.
    pub purpose: B256,
    /// The intent's nonce.
    pub intent_nonce: U256,
    /// The intent's deadline (unix seconds).
    pub deadline: i64,
    /// Whether the simulation executed it (rather than making it pending).
    pub expect_executed: bool,
    /// The engine's transaction that carries it.
    pub transaction_id: i64,
    /// The request's idempotency key, if it had one.
    pub request_key: Option<&'a str>,
}

/// An accepted payment, or an x402 reservation, whose transaction the engine has not seen
/// mined.
#[derive(Clone, Debug)]
pub struct Unmined {
    /// Its session.
    pub session_id: String,
    /// Base units.
    pub amount: U256,
    /// Whether the simulation executed it (rather than making it pending); a reservation
    /// always does.
    pub expect_executed: bool,
    /// Its transaction's nonce (of the session's signer).
    pub tx_nonce: i64,
    /// The intent's nonce.
    pub intent_nonce: U256,
}

/// What a payment's transaction did to it, as its receipt's events said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PaymentOutcome {
    /// Paid (`PaymentExecuted`).
    Executed,
    /// Above the co-sign threshold: waiting for the owner (`PaymentPending`).
    Pending,
    /// Paid once the owner approved it.
    Approved,
    /// The owner rejected it.
    Rejected,
    /// Refused by the wallet, or its transaction failed; the error says why.
    Reverted,
}

impl PaymentOutcome {
    /// Its name in the database, the logs and the webhooks' states.
    pub fn as_str(self) -> &'static str {
        match self {
            PaymentOutcome::Executed => "executed",
            PaymentOutcome::Pending => "pending",
            PaymentOutcome::Approved => "approved",
            PaymentOutcome::Rejected => "rejected",
            PaymentOutcome::Reverted => "reverted",
        }
    }
}

impl std::str::FromStr for PaymentOutcome {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        Ok(match s {
            "executed" => PaymentOutcome::Executed,
            "pending" => PaymentOutcome::Pending,
            "approved" => PaymentOutcome::Approved,
            "rejected" => PaymentOutcome::Rejected,
            "reverted" => PaymentOutcome::Reverted,
            _ => return Err(()),
        })
    }
}

/// A payment with its transaction's progress.
#[derive(Clone, Debug, Default)]
pub struct PaymentRow {
    /// `pay_…`.
    pub id: String,
    /// Its session.
    pub session_id: String,
    /// The payee.
    pub to: Address,
    /// Base units.
    pub amount: U256,
    /// The purpose hash.
    pub purpose: B256,
    /// The intent's nonce.
    pub intent_nonce: U256,
    /// The intent's deadline (unix seconds).
    pub deadline: i64,
    /// Whether the simulation at acceptance executed it.
    pub expect_executed: bool,
    /// The engine's transaction.
    pub transaction_id: i64,
    /// What the receipt said, once read.
    pub outcome: Option<PaymentOutcome>,
    /// The receipt registry's id for an executed payment.
    pub receipt_id: Option<U256>,
    /// The wallet's pending id for a co-signed one.
    pub pending_id: Option<U256>,
    /// The contract error a failed one reverted with.
    pub error_code: Option<String>,
    /// Its arguments, JSON.
    pub error_details: Option<String>,
    /// When it was accepted (unix ms).
    pub created_at: i64,
    /// The transaction's status (signed, submitted, mined, confirmed, failed).
    pub tx_status: TxStatus,
    /// The mined attempt's hash.
    pub tx_hash: Option<B256>,
    /// Its block.
    pub block_number: Option<i64>,
    /// The transaction's receipt status (1 ok, 0 reverted).
    pub receipt_status: Option<i64>,
}

/// Where a payment is: `queued → submitted → mined → confirmed`, or `pending_approval` (the
/// owner decides), `rejected`, `failed` or `expired`.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum PaymentStatus {
    /// Stored with its signed transaction; not yet accepted by the node.
    Queued,
    /// Accepted by the node.
    Submitted,
    /// In a block (executed, or approved by the owner), not yet final.
    Mined,
    /// Final.
    Confirmed,
    /// Above the co-sign threshold: waiting for the owner.
    PendingApproval,
    /// The owner rejected it.
    Rejected,
    /// Reverted on chain, or its transaction will never be mined.
    Failed,
    /// Its deadline, or its pending approval's, passed.
    Expired,
}

impl PaymentStatus {
    /// Every status.
    pub const ALL: [PaymentStatus; 8] = [
        PaymentStatus::Queued,
        PaymentStatus::Submitted,
        PaymentStatus::Mined,
        PaymentStatus::Confirmed,
        PaymentStatus::PendingApproval,
        PaymentStatus::Rejected,
        PaymentStatus::Failed,
        PaymentStatus::Expired,
    ];

    /// The status named `name` in the API.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// Whether it can never change again.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            PaymentStatus::Confirmed
                | PaymentStatus::Rejected
                | PaymentStatus::Failed
                | PaymentStatus::Expired
        )
    }

    /// Its name in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            PaymentStatus::Queued => "queued",
            PaymentStatus::Submitted => "submitted",
            PaymentStatus::Mined => "mined",
            PaymentStatus::Confirmed => "confirmed",
            PaymentStatus::PendingApproval => "pending_approval",
            PaymentStatus::Rejected => "rejected",
            PaymentStatus::Failed => "failed",
            PaymentStatus::Expired => "expired",
        }
    }
}

impl PaymentRow {
    /// Its status, from its outcome and its transaction's progress.
    pub fn status(&self) -> PaymentStatus {
        use PaymentOutcome::*;
        match self.outcome {
            Some(Executed | Approved) if self.tx_status == TxStatus::Confirmed => {
                PaymentStatus::Confirmed
            }
            Some(Executed | Approved) => PaymentStatus::Mined,
            Some(Pending) => PaymentStatus::PendingApproval,
            Some(Rejected) => PaymentStatus::Rejected,
            Some(Reverted) => match self.error_code.as_deref() {
                Some("WalletDeadlinePassed" | "WalletPendingExpired") => PaymentStatus::Expired,
                _ => PaymentStatus::Failed,
            },
            None => match self.tx_status {
                TxStatus::Signed => PaymentStatus::Queued,
                TxStatus::Submitted => PaymentStatus::Submitted,
                TxStatus::Failed => PaymentStatus::Failed,
                TxStatus::Mined | TxStatus::Confirmed => PaymentStatus::Mined,
            },
        }
    }
}

const PAYMENT_COLUMNS: &str = "p.id, p.session_id, p.to_address, p.amount, p.purpose, \
    p.intent_nonce, p.deadline, p.expect_executed, p.transaction_id, p.outcome, p.receipt_id, \
    p.pending_id, p.error_code, p.error_details, p.created_at, t.status AS tx_status, \
    t.mined_hash, t.block_number, t.receipt_status";

fn payment_row(r: &AnyRow) -> Result<PaymentRow, StoreError> {
    Ok(PaymentRow {
        id: r.try_get("id")?,
        session_id: r.try_get("session_id")?,
        to: parsed(r, "to_address")?,
        amount: parsed(r, "amount")?,
        purpose: parsed(r, "purpose")?,
        intent_nonce: parsed(r, "intent_nonce")?,
        deadline: r.try_get("deadline")?,
        expect_executed: r.try_get::<i64, _>("expect_executed")? != 0,
        transaction_id: r.try_get("transaction_id")?,
        outcome: parsed_opt(r, "outcome")?,
        receipt_id: parsed_opt(r, "receipt_id")?,
        pending_id: parsed_opt(r, "pending_id")?,
        error_code: r.try_get("error_code")?,
        error_details: r.try_get("error_details")?,
        created_at: r.try_get("created_at")?,
        tx_status: TxStatus::parse(&r.try_get::<String, _>("tx_status")?)?,
        tx_hash: parsed_opt(r, "mined_hash")?,
        block_number: r.try_get("block_number")?,
        receipt_status: r.try_get("receipt_status")?,
    })
}

impl Store {
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
                    .bind(format!("{:#x}", p.to))
                    .bind(p.amount.to_string())
                    .bind(p.purpose.to_string())
                    .bind(p.intent_nonce.to_string())
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

    /// `host_id`'s payments (of all its sessions), newest first.
    pub async fn host_payments(
        &self,
        host_id: &str,
        limit: i64,
    ) -> Result<Vec<PaymentRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {PAYMENT_COLUMNS} FROM payments p JOIN transactions t ON t.id = p.transaction_id \
             JOIN sessions s ON s.id = p.session_id \
             WHERE s.host_id = $1 ORDER BY p.created_at DESC, p.id LIMIT $2"
        ))
        .bind(host_id)
        .bind(limit)
        .fetch_all(&self.read)
        .await?;
        rows.iter().map(payment_row).collect()
    }

    /// The queue version of each of `sessions` (see [`Store::advance_queue_versions`]). Read it
    /// before their payments: payments newer than the version are then only ever counted
    /// twice, never missed.
    pub async fn queue_versions(
        &self,
        sessions: &[&str],
    ) -> Result<Vec<(String, i64)>, StoreError> {
        if sessions.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT id, queue_version FROM sessions WHERE id IN ({})",
            in_list(sessions.len())
        );
        let mut q = sqlx::query(&sql);
        for s in sessions {
            q = q.bind(*s);
        }
        let rows = q.fetch_all(&self.read).await?;
        rows.iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect()
    }

    /// Inside `db`, advances the queue version of each session in `expected` that is still at
    /// the version given, and answers those advanced. A session missing from the answer was
    /// queued for by another process since its version was read: what was checked against
    /// that version is stale. The update holds each session's row until `db` ends, so two
    /// processes never both advance from one version.
    pub async fn advance_queue_versions(
        db: &mut DbTx,
        expected: &[(&str, i64)],
    ) -> Result<Vec<String>, StoreError> {
        if expected.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "UPDATE sessions SET queue_version = queue_version + 1 FROM (VALUES {}) AS v \
             WHERE id = v.column1 AND queue_version = v.column2 RETURNING id",
            super::text_and_number_values(expected.len())
        );
        let mut q = sqlx::query_scalar(&sql);
        for (id, version) in expected {
            q = q.bind(*id).bind(*version);
        }
        Ok(q.fetch_all(&mut **db).await?)
    }

    /// Inside `db`, records that transaction `transaction_id` reserves `amount` of `session`
    /// (an x402 authorization under the session's intent nonce `intent_nonce`).
    pub async fn add_reservation(
        db: &mut DbTx,
        transaction_id: i64,
        session: &str,
        amount: &str,
        intent_nonce: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO reservations (transaction_id, session_id, amount, intent_nonce) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(transaction_id)
        .bind(session)
        .bind(amount)
        .bind(intent_nonce)
        .execute(&mut **db)
        .await?;
        Ok(())
    }

    /// The accepted payments and x402 reservations of `sessions` whose transaction the engine
    /// has not seen mined, in the order of their transactions' nonces. Some may be on chain
    /// already; the caller asks the chain.
    pub async fn unmined_payments(&self, sessions: &[&str]) -> Result<Vec<Unmined>, StoreError> {
        if sessions.is_empty() {
            return Ok(Vec::new());
        }
        let ids = in_list(sessions.len());
        let sql = format!(
            "SELECT p.session_id, p.amount, p.expect_executed, t.nonce, p.intent_nonce \
             FROM payments p JOIN transactions t ON t.id = p.transaction_id \
             WHERE p.session_id IN ({ids}) AND t.status IN ('signed', 'submitted') \
             UNION ALL \
             SELECT r.session_id, r.amount, 1, t.nonce, r.intent_nonce \
             FROM reservations r JOIN transactions t ON t.id = r.transaction_id \
             WHERE r.session_id IN ({ids}) AND t.status IN ('signed', 'submitted') \
             ORDER BY 4"
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
                    amount: parsed(r, "amount")?,
                    expect_executed: r.try_get::<i64, _>(2)? != 0,
                    tx_nonce: r.try_get(3)?,
                    intent_nonce: parsed(r, "intent_nonce")?,
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
                    outcome: parsed_opt(r, "outcome")?,
                    tx_status: TxStatus::parse(&r.try_get::<String, _>(1)?)?,
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

    /// Records what a payment's receipt said, inside `db`.
    pub async fn set_payment_outcome(
        db: &mut DbTx,
        id: &str,
        outcome: PaymentOutcome,
        receipt_id: Option<U256>,
        pending_id: Option<U256>,
        error: Option<(&str, &str)>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE payments SET outcome = $1, receipt_id = COALESCE($2, receipt_id), \
             pending_id = COALESCE($3, pending_id), error_code = $4, error_details = $5 \
             WHERE id = $6",
        )
        .bind(outcome.as_str())
        .bind(receipt_id.map(|r| r.to_string()))
        .bind(pending_id.map(|p| p.to_string()))
        .bind(error.map(|e| e.0))
        .bind(error.map(|e| e.1))
        .bind(id)
        .execute(&mut **db)
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

    /// Claims payment `id`'s decision for transaction `tx_id`, inside `db`: `false` when another
    /// decision holds it (sent, not yet settled). Two requests carrying the owner's one signed
    /// decision (a double click, the page and the host's API) send one transaction: the row's
    /// lock settles which, in any number of processes.
    pub async fn claim_payment_decision(
        db: &mut DbTx,
        id: &str,
        tx_id: i64,
    ) -> Result<bool, StoreError> {
        let claimed = sqlx::query(
            "UPDATE payments SET decision_transaction = $1 \
             WHERE id = $2 AND decision_transaction IS NULL",
        )
        .bind(tx_id)
        .bind(id)
        .execute(&mut **db)
        .await?
        .rows_affected();
        Ok(claimed == 1)
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
    pub async fn decided_payments(&self) -> Result<Vec<(String, U256, i64)>, StoreError> {
        let rows = sqlx::query(
            "SELECT p.id, p.pending_id, p.decision_transaction FROM payments p \
             JOIN transactions t ON t.id = p.decision_transaction \
             WHERE p.outcome = 'pending' AND t.status IN ('mined', 'confirmed', 'failed')",
        )
        .fetch_all(&self.read)
        .await?;
        rows.iter()
            .map(|r| Ok((r.try_get(0)?, parsed(r, "pending_id")?, r.try_get(2)?)))
            .collect()
    }
}

/// `$1, $2, …, $n`.
fn in_list(n: usize) -> String {
    (1..=n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payments_status_follows_its_outcome_then_its_transaction() {
        let row = |outcome: Option<&str>, tx: TxStatus, error: Option<&str>| PaymentRow {
            outcome: outcome.map(|o: &str| o.parse().unwrap()),
            tx_status: tx,
            error_code: error.map(str::to_owned),
            ..PaymentRow::default()
        };
        let cases = [
            (row(None, TxStatus::Signed, None), PaymentStatus::Queued),
            (
                row(None, TxStatus::Submitted, None),
                PaymentStatus::Submitted,
            ),
            (row(None, TxStatus::Mined, None), PaymentStatus::Mined),
            (row(None, TxStatus::Failed, None), PaymentStatus::Failed),
            (
                row(Some("executed"), TxStatus::Confirmed, None),
                PaymentStatus::Confirmed,
            ),
            (
                row(Some("approved"), TxStatus::Mined, None),
                PaymentStatus::Mined,
            ),
            (
                row(Some("pending"), TxStatus::Confirmed, None),
                PaymentStatus::PendingApproval,
            ),
            (
                row(Some("rejected"), TxStatus::Mined, None),
                PaymentStatus::Rejected,
            ),
            (
                row(
                    Some("reverted"),
                    TxStatus::Mined,
                    Some("WalletDeadlinePassed"),
                ),
                PaymentStatus::Expired,
            ),
            (
                row(Some("reverted"), TxStatus::Mined, Some("WalletCapExceeded")),
                PaymentStatus::Failed,
            ),
        ];
        for (row, status) in cases {
            assert_eq!(row.status(), status, "{row:?}");
        }
    }
}
