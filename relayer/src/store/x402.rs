//! x402 settlements the facilitator took on: who sends or waits for each, and whether its
//! `success` was answered (at most once, across processes).

use sqlx::Row;

use super::{DbTx, Store, StoreError};

/// What a `settle` of a payment finds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SettlementTurn {
    /// Nothing was sent for it: this request checks and sends it.
    Send,
    /// It was sent (as this) and nobody waits for it now: this request waits and answers.
    Wait(String),
    /// Another request sends or waits for it now.
    Busy,
    /// Its `success` was answered, with this transaction hash.
    Answered(String),
    /// The key was settled with another payload (another signature of the same nonce).
    Mismatch,
}

impl Store {
    /// Takes the turn of settling payment `key` (payload hash `request_hash`) for relayer
    /// process `instance`. A turn held by a process whose last heartbeat is older than
    /// `dead_before` (unix ms) is taken over.
    pub async fn claim_settlement(
        &self,
        key: &str,
        request_hash: &str,
        instance: &str,
        now: i64,
        dead_before: i64,
    ) -> Result<SettlementTurn, StoreError> {
        let inserted = sqlx::query(
            "INSERT INTO x402_settlements (key, request_hash, waiter, created_at) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (key) DO NOTHING",
        )
        .bind(key)
        .bind(request_hash)
        .bind(instance)
        .bind(now)
        .execute(&self.pool)
        .await?
        .rows_affected();
        if inserted == 1 {
            return Ok(SettlementTurn::Send);
        }
        // Unanswered, and nobody (alive) on it: one taker wins.
        let taken = sqlx::query(
            "UPDATE x402_settlements SET waiter = $1 WHERE key = $2 AND request_hash = $3 \
             AND answered IS NULL AND (waiter IS NULL OR NOT EXISTS (SELECT 1 FROM instances i \
                 WHERE i.id = x402_settlements.waiter AND i.heartbeat_at >= $4))",
        )
        .bind(instance)
        .bind(key)
        .bind(request_hash)
        .bind(dead_before)
        .execute(&self.pool)
        .await?
        .rows_affected();
        let row =
            sqlx::query("SELECT request_hash, sent, answered FROM x402_settlements WHERE key = $1")
                .bind(key)
                .fetch_optional(&self.pool)
                .await?;
        let Some(row) = row else {
            // Forgotten between the two: the caller may try again.
            return Ok(SettlementTurn::Busy);
        };
        let hash: String = row.try_get(0)?;
        let sent: Option<String> = row.try_get(1)?;
        let answered: Option<String> = row.try_get(2)?;
        Ok(match (hash == request_hash, answered, taken == 1, sent) {
            (false, _, _, _) => SettlementTurn::Mismatch,
            (true, Some(hash), _, _) => SettlementTurn::Answered(hash),
            (true, None, true, Some(sent)) => SettlementTurn::Wait(sent),
            (true, None, true, None) => SettlementTurn::Send,
            (true, None, false, _) => SettlementTurn::Busy,
        })
    }

    /// Records what carries settlement `key` (inside `db`, with the transaction itself when
    /// there is one, so that a taker never sends it again).
    pub async fn settlement_sent(db: &mut DbTx, key: &str, sent: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE x402_settlements SET sent = $1 WHERE key = $2")
            .bind(sent)
            .bind(key)
            .execute(&mut **db)
            .await?;
        Ok(())
    }

    /// Answers settlement `key` as settled in `hash`, if `instance` still holds its turn:
    /// `false` when it does not (the turn was taken over and answered elsewhere).
    pub async fn answer_settlement(
        &self,
        key: &str,
        instance: &str,
        hash: &str,
    ) -> Result<bool, StoreError> {
        let answered = sqlx::query(
            "UPDATE x402_settlements SET answered = $1, waiter = NULL \
             WHERE key = $2 AND waiter = $3 AND answered IS NULL",
        )
        .bind(hash)
        .bind(key)
        .bind(instance)
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(answered == 1)
    }

    /// Gives up `instance`'s turn on settlement `key` (its outcome was not known in time): the
    /// next `settle` waits for it.
    pub async fn leave_settlement(&self, key: &str, instance: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE x402_settlements SET waiter = NULL WHERE key = $1 AND waiter = $2")
            .bind(key)
            .bind(instance)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Forgets settlement `key` held by `instance`, unanswered: nothing was sent, or what was
    /// sent failed, so a later `settle` checks it afresh.
    pub async fn forget_settlement(&self, key: &str, instance: &str) -> Result<(), StoreError> {
        sqlx::query(
            "DELETE FROM x402_settlements WHERE key = $1 AND waiter = $2 AND answered IS NULL",
        )
        .bind(key)
        .bind(instance)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
