//! Feedback sessions gave through the ReceiptRegistry: stored with their transactions, and
//! their outcomes.

use alloy_primitives::{B256, U256};
use sqlx::any::AnyRow;
use sqlx::Row;

use super::{parsed, parsed_opt, DbTx, Store, StoreError, TxStatus};

/// What a feedback's transaction did, once mined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FeedbackOutcome {
    /// In the Reputation Registry (`ReceiptFeedbackGiven`).
    Given,
    /// Refused, or its transaction failed; the error says why.
    Reverted,
}

impl FeedbackOutcome {
    /// Its name in the database, the logs and the webhooks' states.
    pub fn as_str(self) -> &'static str {
        match self {
            FeedbackOutcome::Given => "given",
            FeedbackOutcome::Reverted => "reverted",
        }
    }
}

impl std::str::FromStr for FeedbackOutcome {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            "given" => Ok(FeedbackOutcome::Given),
            "reverted" => Ok(FeedbackOutcome::Reverted),
            _ => Err(()),
        }
    }
}

/// A feedback with its transaction's progress.
#[derive(Clone, Debug)]
pub struct FeedbackRow {
    /// `fb_…`.
    pub id: String,
    /// The session that gave it.
    pub session_id: String,
    /// The payment whose receipt backs it.
    pub payment_id: String,
    /// The agent rated.
    pub agent_id: U256,
    /// The rating as submitted, JSON.
    pub rating: String,
    /// The engine's transaction.
    pub transaction_id: i64,
    /// What its transaction did, once mined.
    pub outcome: Option<FeedbackOutcome>,
    /// Its index among the ReceiptRegistry's feedback on the agent.
    pub feedback_index: Option<i64>,
    /// The contract error it reverted with.
    pub error_code: Option<String>,
    /// Its arguments, JSON.
    pub error_details: Option<String>,
    /// When it was accepted (unix ms).
    pub created_at: i64,
    /// The transaction's status.
    pub tx_status: TxStatus,
    /// The mined attempt's hash.
    pub tx_hash: Option<B256>,
    /// Its block.
    pub block_number: Option<i64>,
}

/// A feedback to store.
pub struct NewFeedback<'a> {
    /// `fb_…`.
    pub id: &'a str,
    /// The session that gives it.
    pub session_id: &'a str,
    /// The payment whose receipt backs it.
    pub payment_id: &'a str,
    /// The agent rated.
    pub agent_id: U256,
    /// The rating as submitted, JSON.
    pub rating: &'a str,
    /// The engine's transaction.
    pub transaction_id: i64,
    /// The request's idempotency key.
    pub request_key: Option<&'a str>,
}

const FEEDBACK_COLUMNS: &str = "f.id, f.session_id, f.payment_id, f.agent_id, f.rating, \
    f.transaction_id, f.outcome, f.feedback_index, f.error_code, f.error_details, f.created_at, \
    t.status AS tx_status, t.mined_hash, t.block_number";

fn feedback_row(r: &AnyRow) -> Result<FeedbackRow, StoreError> {
    Ok(FeedbackRow {
        id: r.try_get("id")?,
        session_id: r.try_get("session_id")?,
        payment_id: r.try_get("payment_id")?,
        agent_id: parsed(r, "agent_id")?,
        rating: r.try_get("rating")?,
        transaction_id: r.try_get("transaction_id")?,
        outcome: parsed_opt(r, "outcome")?,
        feedback_index: r.try_get("feedback_index")?,
        error_code: r.try_get("error_code")?,
        error_details: r.try_get("error_details")?,
        created_at: r.try_get("created_at")?,
        tx_status: TxStatus::parse(&r.try_get::<String, _>("tx_status")?)?,
        tx_hash: parsed_opt(r, "mined_hash")?,
        block_number: r.try_get("block_number")?,
    })
}

impl Store {
    /// The feedback a request with idempotency key `request_key` made.
    pub async fn feedback_by_request_key(
        &self,
        request_key: &str,
    ) -> Result<Option<FeedbackRow>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {FEEDBACK_COLUMNS} FROM feedback f \
             JOIN transactions t ON t.id = f.transaction_id WHERE f.request_key = $1"
        ))
        .bind(request_key)
        .fetch_optional(&self.read)
        .await?;
        row.as_ref().map(feedback_row).transpose()
    }

    /// Records a feedback, inside `db` (with its transaction).
    pub async fn insert_feedback(
        db: &mut DbTx,
        f: &NewFeedback<'_>,
        now: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO feedback (id, session_id, payment_id, agent_id, rating, transaction_id, \
             request_key, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(f.id)
        .bind(f.session_id)
        .bind(f.payment_id)
        .bind(f.agent_id.to_string())
        .bind(f.rating)
        .bind(f.transaction_id)
        .bind(f.request_key)
        .bind(now)
        .execute(&mut **db)
        .await?;
        Ok(())
    }

    /// Feedback `id` of session `session_id`.
    pub async fn feedback(
        &self,
        id: &str,
        session_id: &str,
    ) -> Result<Option<FeedbackRow>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {FEEDBACK_COLUMNS} FROM feedback f \
             JOIN transactions t ON t.id = f.transaction_id \
             WHERE f.id = $1 AND f.session_id = $2"
        ))
        .bind(id)
        .bind(session_id)
        .fetch_optional(&self.read)
        .await?;
        row.as_ref().map(feedback_row).transpose()
    }

    /// Feedback whose transaction is mined or failed and whose outcome is unread.
    pub async fn unsettled_feedback(&self, limit: i64) -> Result<Vec<FeedbackRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {FEEDBACK_COLUMNS} FROM feedback f \
             JOIN transactions t ON t.id = f.transaction_id \
             WHERE f.outcome IS NULL AND t.status IN ('mined', 'confirmed', 'failed') \
             ORDER BY f.transaction_id LIMIT $1"
        ))
        .bind(limit)
        .fetch_all(&self.read)
        .await?;
        rows.iter().map(feedback_row).collect()
    }

    /// Records what a feedback's receipt said.
    pub async fn set_feedback_outcome(
        &self,
        id: &str,
        outcome: FeedbackOutcome,
        feedback_index: Option<u64>,
        error: Option<(&str, &str)>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE feedback SET outcome = $1, feedback_index = $2, error_code = $3, \
             error_details = $4 WHERE id = $5",
        )
        .bind(outcome.as_str())
        .bind(feedback_index.map(|i| i as i64))
        .bind(error.map(|e| e.0))
        .bind(error.map(|e| e.1))
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
