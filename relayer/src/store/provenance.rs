//! Provenance records: stored with their transactions, and their outcomes.

use alloy_primitives::B256;
use sqlx::any::AnyRow;
use sqlx::Row;

use super::{parsed_opt, DbTx, Store, StoreError, TxStatus};

/// What a provenance record's transaction did, once mined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProvenanceOutcome {
    /// In the registry (`ProvenanceRecorded`).
    Recorded,
    /// Refused, or its transaction failed; the error says why.
    Reverted,
}

impl ProvenanceOutcome {
    /// Its name in the database, the logs and the webhooks' states.
    pub fn as_str(self) -> &'static str {
        match self {
            ProvenanceOutcome::Recorded => "recorded",
            ProvenanceOutcome::Reverted => "reverted",
        }
    }
}

impl std::str::FromStr for ProvenanceOutcome {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            "recorded" => Ok(ProvenanceOutcome::Recorded),
            "reverted" => Ok(ProvenanceOutcome::Reverted),
            _ => Err(()),
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
    /// What its transaction did, once mined.
    pub outcome: Option<ProvenanceOutcome>,
    /// The registry's record id.
    pub record_id: Option<String>,
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
    /// The transaction's receipt status.
    pub receipt_status: Option<i64>,
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
        outcome: parsed_opt(r, "outcome")?,
        record_id: r.try_get("record_id")?,
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
        outcome: ProvenanceOutcome,
        record_id: Option<&str>,
        error: Option<(&str, &str)>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE provenance SET outcome = $1, record_id = $2, error_code = $3, \
             error_details = $4 WHERE id = $5",
        )
        .bind(outcome.as_str())
        .bind(record_id)
        .bind(error.map(|e| e.0))
        .bind(error.map(|e| e.1))
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
