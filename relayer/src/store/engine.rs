//! The transaction engine's rows: signers with their next nonce, transactions, and the signed
//! attempts of each.

use alloy_primitives::{Address, Bytes, B256, U256};
use sqlx::Row;

use super::{
    parsed, parsed_opt, placeholders, take_numbers, Counter, DbTx, Store, StoreError,
    ROWS_PER_INSERT,
};

/// Where a transaction is. `signed` → `submitted` → `mined` → `confirmed`, or `failed`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TxStatus {
    /// Nonce allocated and signed bytes stored; not yet accepted by the node.
    #[default]
    Signed,
    /// Accepted by the node; no receipt yet. A missing receipt means "unknown", never failed.
    Submitted,
    /// In a block, not yet final.
    Mined,
    /// Enough blocks on top (or finalized): the receipt is final.
    Confirmed,
    /// Will never be mined: its nonce went to another transaction of the same key.
    Failed,
}

impl TxStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            TxStatus::Signed => "signed",
            TxStatus::Submitted => "submitted",
            TxStatus::Mined => "mined",
            TxStatus::Confirmed => "confirmed",
            TxStatus::Failed => "failed",
        }
    }

    pub(super) fn parse(s: &str) -> Result<Self, StoreError> {
        Ok(match s {
            "signed" => TxStatus::Signed,
            "submitted" => TxStatus::Submitted,
            "mined" => TxStatus::Mined,
            "confirmed" => TxStatus::Confirmed,
            "failed" => TxStatus::Failed,
            other => return Err(StoreError::Corrupt(format!("transaction status {other:?}"))),
        })
    }
}

/// What a new transaction does (the engine signs it once its nonce is known).
#[derive(Clone, Debug)]
pub struct NewTransaction {
    /// The relayer signer that sends it.
    pub signer: String,
    /// The callee.
    pub to: String,
    /// Calldata, hex.
    pub data: String,
    /// Value in wei, decimal.
    pub value: String,
    /// Gas limit.
    pub gas_limit: i64,
}

/// One signed version of a transaction.
#[derive(Clone, Debug)]
pub struct NewAttempt {
    /// Its hash.
    pub hash: B256,
    /// The signed EIP-2718 bytes.
    pub raw: Bytes,
    /// `maxFeePerGas`.
    pub max_fee: u128,
    /// `maxPriorityFeePerGas`.
    pub max_priority_fee: u128,
}

/// A stored transaction.
#[derive(Clone, Debug)]
pub struct TxRow {
    /// Its id.
    pub id: i64,
    /// The signer that sends it.
    pub signer: Address,
    /// Its nonce.
    pub nonce: i64,
    /// What it does.
    pub to: Address,
    /// Calldata.
    pub data: Bytes,
    /// Value in wei.
    pub value: U256,
    /// Gas limit.
    pub gas_limit: i64,
    /// Where it is.
    pub status: TxStatus,
    /// When the engine looks at it next (unix ms).
    pub next_check_at: i64,
    /// When it was stored (unix ms).
    pub created_at: i64,
    /// When the node first accepted it (unix ms).
    pub submitted_at: Option<i64>,
    /// The attempt that was mined.
    pub mined_hash: Option<B256>,
    /// Its block.
    pub block_number: Option<i64>,
    /// That block's hash.
    pub block_hash: Option<B256>,
    /// 1: succeeded, 0: reverted.
    pub receipt_status: Option<i64>,
    /// The last error met while sending it.
    pub last_error: Option<String>,
}

/// A stored attempt.
#[derive(Clone, Debug)]
pub struct AttemptRow {
    /// 0 for the first, then one more per replacement.
    pub attempt: i64,
    /// Its hash.
    pub hash: B256,
    /// The signed bytes.
    pub raw: Bytes,
    /// `maxFeePerGas`.
    pub max_fee: u128,
    /// `maxPriorityFeePerGas`.
    pub max_priority_fee: u128,
}

const TX_COLUMNS: &str = "id, signer, nonce, to_address, data, value, gas_limit, status, \
    next_check_at, created_at, submitted_at, mined_hash, block_number, block_hash, receipt_status, last_error";

fn tx_row(r: &sqlx::any::AnyRow) -> Result<TxRow, StoreError> {
    Ok(TxRow {
        id: r.try_get("id")?,
        signer: parsed(r, "signer")?,
        nonce: r.try_get("nonce")?,
        to: parsed(r, "to_address")?,
        data: parsed(r, "data")?,
        value: parsed(r, "value")?,
        gas_limit: r.try_get("gas_limit")?,
        status: TxStatus::parse(r.try_get::<String, _>("status")?.as_str())?,
        next_check_at: r.try_get("next_check_at")?,
        created_at: r.try_get("created_at")?,
        submitted_at: r.try_get("submitted_at")?,
        mined_hash: parsed_opt(r, "mined_hash")?,
        block_number: r.try_get("block_number")?,
        block_hash: parsed_opt(r, "block_hash")?,
        receipt_status: r.try_get("receipt_status")?,
        last_error: r.try_get("last_error")?,
    })
}

impl Store {
    /// Records `signer` with the chain's nonce for it, or, when the chain is ahead of the
    /// stored next nonce (the key sent transactions the relayer did not), catches up with it.
    pub async fn reconcile_signer(
        &self,
        signer: &str,
        chain_nonce: i64,
    ) -> Result<i64, StoreError> {
        let mut tx = self.pool.begin().await?;
        let stored: Option<i64> =
            sqlx::query_scalar("SELECT next_nonce FROM signers WHERE address = $1")
                .bind(signer)
                .fetch_optional(&mut *tx)
                .await?;
        let next = match stored {
            None => {
                sqlx::query("INSERT INTO signers (address, next_nonce) VALUES ($1, $2)")
                    .bind(signer)
                    .bind(chain_nonce)
                    .execute(&mut *tx)
                    .await?;
                chain_nonce
            }
            Some(n) if n < chain_nonce => {
                sqlx::query("UPDATE signers SET next_nonce = $1 WHERE address = $2")
                    .bind(chain_nonce)
                    .bind(signer)
                    .execute(&mut *tx)
                    .await?;
                chain_nonce
            }
            Some(n) => n,
        };
        tx.commit().await?;
        Ok(next)
    }

    /// Allocates each signer's next nonces to its transactions in `new` (in order), signs each
    /// with its nonce (`sign` is given its index in `new`) and stores the transactions and their
    /// first attempts, inside `db`: a nonce is never handed out without the signed bytes that
    /// use it being stored, and the caller's own rows (payments, a session) commit with the
    /// transactions or not at all. A crash before the commit leaves nothing behind. Answers
    /// the transactions' `(id, nonce)` in the order of `new`; a statement for the nonces and
    /// one per [`ROWS_PER_INSERT`] rows, however many transactions there are.
    pub async fn insert_transactions(
        db: &mut DbTx,
        new: &[NewTransaction],
        now: i64,
        mut sign: impl FnMut(usize, u64) -> NewAttempt,
    ) -> Result<Vec<(i64, u64)>, StoreError> {
        let signers: Vec<&str> = new.iter().map(|t| t.signer.as_str()).collect();
        let nonces = take_numbers(db, Counter::SignerNonce, &signers).await?;
        let mut ids = Vec::with_capacity(new.len());
        for (chunk, start) in new
            .chunks(ROWS_PER_INSERT)
            .zip((0..).step_by(ROWS_PER_INSERT))
        {
            let sql = format!(
                "INSERT INTO transactions (signer, nonce, to_address, data, value, gas_limit, \
                 status, next_check_at, created_at) VALUES {} RETURNING id, signer, nonce",
                placeholders(db, chunk.len(), 9)
            );
            let mut q = sqlx::query(&sql);
            for (i, t) in chunk.iter().enumerate() {
                q = q
                    .bind(&t.signer)
                    .bind(nonces[start + i])
                    .bind(&t.to)
                    .bind(&t.data)
                    .bind(&t.value)
                    .bind(t.gas_limit)
                    .bind(TxStatus::Signed.as_str())
                    .bind(now)
                    .bind(now);
            }
            // A multi-row RETURNING promises no order: match rows by (signer, nonce).
            let rows = q.fetch_all(&mut **db).await?;
            let mut by_nonce = std::collections::HashMap::with_capacity(rows.len());
            for r in &rows {
                let key: (String, i64) = (r.try_get("signer")?, r.try_get("nonce")?);
                by_nonce.insert(key, r.try_get::<i64, _>("id")?);
            }
            for (i, t) in chunk.iter().enumerate() {
                let id = by_nonce
                    .get(&(t.signer.clone(), nonces[start + i]))
                    .ok_or_else(|| StoreError::Corrupt("inserted transaction missing".into()))?;
                ids.push((*id, nonces[start + i] as u64));
            }
            let attempts: Vec<_> = (0..chunk.len())
                .map(|i| {
                    (
                        ids[start + i].0,
                        0,
                        sign(start + i, nonces[start + i] as u64),
                    )
                })
                .collect();
            insert_attempts(db, &attempts, now).await?;
        }
        Ok(ids)
    }

    /// Stores a replacement of transaction `id` (the next attempt number).
    pub async fn add_attempt(
        &self,
        id: i64,
        attempt: &NewAttempt,
        now: i64,
    ) -> Result<i64, StoreError> {
        let mut tx = self.pool.begin().await?;
        let last: i64 =
            sqlx::query_scalar("SELECT MAX(attempt) FROM attempts WHERE transaction_id = $1")
                .bind(id)
                .fetch_one(&mut *tx)
                .await?;
        insert_attempts(&mut tx, &[(id, last + 1, attempt.clone())], now).await?;
        tx.commit().await?;
        Ok(last + 1)
    }

    /// How many transactions are in each status.
    pub async fn transaction_counts(&self) -> Result<Vec<(String, i64)>, StoreError> {
        let rows = sqlx::query("SELECT status, COUNT(*) FROM transactions GROUP BY status")
            .fetch_all(&self.read)
            .await?;
        rows.iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect()
    }

    /// Transaction `id`.
    pub async fn transaction(&self, id: i64) -> Result<Option<TxRow>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {TX_COLUMNS} FROM transactions WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.read)
        .await?;
        row.as_ref().map(tx_row).transpose()
    }

    /// Unfinished transactions due for a look at `now`, per signer in nonce order.
    pub async fn due_transactions(
        &self,
        signers: &[String],
        now: i64,
        limit: i64,
    ) -> Result<Vec<TxRow>, StoreError> {
        if signers.is_empty() {
            return Ok(Vec::new());
        }
        let placeholders: Vec<String> = (3..3 + signers.len()).map(|i| format!("${i}")).collect();
        let sql = format!(
            "SELECT {TX_COLUMNS} FROM transactions WHERE status IN ('signed', 'submitted', 'mined') \
             AND next_check_at <= $1 AND signer IN ({}) ORDER BY signer, nonce LIMIT $2",
            placeholders.join(", ")
        );
        let mut query = sqlx::query(&sql).bind(now).bind(limit);
        for signer in signers {
            query = query.bind(signer);
        }
        let rows = query.fetch_all(&self.read).await?;
        rows.iter().map(tx_row).collect()
    }

    /// Takes (or keeps) `signers` for process `owner` until `until`: those another process
    /// holds are skipped (on PostgreSQL without waiting for its lock). Returns the signers
    /// `owner` holds now.
    pub async fn own_signers(
        &self,
        owner: &str,
        signers: &[String],
        now: i64,
        until: i64,
    ) -> Result<Vec<String>, StoreError> {
        if signers.is_empty() {
            return Ok(Vec::new());
        }
        // One statement per tick, not one transaction per signer. On PostgreSQL the rows
        // another process is renewing right now are skipped rather than waited for.
        let placeholders: Vec<String> = (4..4 + signers.len()).map(|i| format!("${i}")).collect();
        let free = format!(
            "address IN ({}) AND (owner IS NULL OR owner = $1 OR owned_until < $3)",
            placeholders.join(", ")
        );
        let filter = match self.backend {
            super::Backend::Postgres => {
                format!(
                    "address IN (SELECT address FROM signers WHERE {free} FOR UPDATE SKIP LOCKED)"
                )
            }
            super::Backend::Sqlite => free,
        };
        let sql = format!(
            "UPDATE signers SET owner = $1, owned_until = $2 WHERE {filter} RETURNING address"
        );
        let mut query = sqlx::query_scalar(&sql).bind(owner).bind(until).bind(now);
        for signer in signers {
            query = query.bind(signer);
        }
        Ok(query.fetch_all(&self.pool).await?)
    }

    /// Gives up the signers `owner` holds (a clean stop), for another process to take at once.
    pub async fn release_signers(&self, owner: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE signers SET owner = NULL, owned_until = 0 WHERE owner = $1")
            .bind(owner)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Every attempt of transaction `id`, the newest first.
    pub async fn attempts(&self, id: i64) -> Result<Vec<AttemptRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT attempt, hash, raw, max_fee, max_priority_fee FROM attempts \
             WHERE transaction_id = $1 ORDER BY attempt DESC",
        )
        .bind(id)
        .fetch_all(&self.read)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(AttemptRow {
                    attempt: r.try_get("attempt")?,
                    hash: parsed(r, "hash")?,
                    raw: parsed(r, "raw")?,
                    max_fee: parsed(r, "max_fee")?,
                    max_priority_fee: parsed(r, "max_priority_fee")?,
                })
            })
            .collect()
    }

    /// The node accepted transaction `id` (first time: `submitted_at` is set).
    pub async fn mark_submitted(
        &self,
        id: i64,
        now: i64,
        next_check_at: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE transactions SET status = $1, submitted_at = COALESCE(submitted_at, $2), \
             next_check_at = $3, last_error = NULL WHERE id = $4",
        )
        .bind(TxStatus::Submitted.as_str())
        .bind(now)
        .bind(next_check_at)
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Transaction `id` is in block `block_number` (`block_hash`) as `hash`.
    pub async fn mark_mined(
        &self,
        id: i64,
        hash: B256,
        block_number: i64,
        block_hash: B256,
        receipt_status: i64,
        next_check_at: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE transactions SET status = $1, mined_hash = $2, block_number = $3, \
             block_hash = $4, receipt_status = $5, next_check_at = $6, last_error = NULL \
             WHERE id = $7",
        )
        .bind(TxStatus::Mined.as_str())
        .bind(hash.to_string())
        .bind(block_number)
        .bind(block_hash.to_string())
        .bind(receipt_status)
        .bind(next_check_at)
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Sets the status of transaction `id` (confirmed, failed, or back to submitted after a
    /// reorg) with the next look and an error note.
    pub async fn set_status(
        &self,
        id: i64,
        status: TxStatus,
        next_check_at: i64,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE transactions SET status = $1, next_check_at = $2, last_error = $3 WHERE id = $4",
        )
        .bind(status.as_str())
        .bind(next_check_at)
        .bind(error)
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Looks at transaction `id` again at `next_check_at`, noting `error`.
    pub async fn reschedule(
        &self,
        id: i64,
        next_check_at: i64,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE transactions SET next_check_at = $1, last_error = $2 WHERE id = $3")
            .bind(next_check_at)
            .bind(error)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}

/// Stores `(transaction id, attempt number, attempt)`s.
async fn insert_attempts(
    tx: &mut DbTx,
    attempts: &[(i64, i64, NewAttempt)],
    now: i64,
) -> Result<(), StoreError> {
    for chunk in attempts.chunks(ROWS_PER_INSERT) {
        let sql = format!(
            "INSERT INTO attempts (transaction_id, attempt, hash, raw, max_fee, max_priority_fee, \
             created_at) VALUES {}",
            placeholders(tx, chunk.len(), 7)
        );
        let mut q = sqlx::query(&sql);
        for (id, attempt, a) in chunk {
            q = q
                .bind(*id)
                .bind(*attempt)
                .bind(a.hash.to_string())
                .bind(a.raw.to_string())
                .bind(a.max_fee.to_string())
                .bind(a.max_priority_fee.to_string())
                .bind(now);
        }
        q.execute(&mut **tx).await?;
    }
    Ok(())
}
