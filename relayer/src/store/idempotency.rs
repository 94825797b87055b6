//! Responses kept per `Idempotency-Key`.

use sqlx::Row;

use super::{Store, StoreError};

/// What a request's `Idempotency-Key` finds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// The key is new (or the request that held it belongs to a process that died): this
    /// request runs, and its response is kept.
    New,
    /// A request with this key and the same body finished: its response.
    Replay {
        /// The HTTP status it got.
        status: u16,
        /// Its JSON body.
        response: String,
    },
    /// A request with this key and the same body is running now.
    Running,
    /// The key was used with another body.
    Mismatch,
}

impl Store {
    /// Claims `key` for `caller`'s request whose body hashes to `request_hash`, run by relayer
    /// process `instance`. A claim held by a process whose last heartbeat is older than
    /// `dead_before` (unix ms) is taken over.
    pub async fn claim_idempotency_key(
        &self,
        caller: &str,
        key: &str,
        request_hash: &str,
        instance: &str,
        now: i64,
        dead_before: i64,
    ) -> Result<Claim, StoreError> {
        // The primary key settles concurrent claims: exactly one insert wins.
        let inserted = sqlx::query(
            "INSERT INTO idempotency (caller, key, request_hash, instance, created_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (caller, key) DO NOTHING",
        )
        .bind(caller)
        .bind(key)
        .bind(request_hash)
        .bind(instance)
        .bind(now)
        .execute(&self.pool)
        .await?
        .rows_affected();
        if inserted == 1 {
            return Ok(Claim::New);
        }
        // Unanswered, and its process died: one taker wins.
        let taken = sqlx::query(
            "UPDATE idempotency SET instance = $1 WHERE caller = $2 AND key = $3 \
             AND request_hash = $4 AND status IS NULL AND instance <> $1 \
             AND NOT EXISTS (SELECT 1 FROM instances i \
                 WHERE i.id = idempotency.instance AND i.heartbeat_at >= $5)",
        )
        .bind(instance)
        .bind(caller)
        .bind(key)
        .bind(request_hash)
        .bind(dead_before)
        .execute(&self.pool)
        .await?
        .rows_affected();
        if taken == 1 {
            return Ok(Claim::New);
        }
        let row = sqlx::query(
            "SELECT request_hash, status, response FROM idempotency WHERE caller = $1 AND key = $2",
        )
        .bind(caller)
        .bind(key)
        .fetch_optional(&self.read)
        .await?;
        let Some(row) = row else {
            // Released between the insert and the read: the caller may try again.
            return Ok(Claim::Running);
        };
        let hash: String = row.try_get(0)?;
        if hash != request_hash {
            return Ok(Claim::Mismatch);
        }
        let status: Option<i64> = row.try_get(1)?;
        let response: Option<String> = row.try_get(2)?;
        Ok(match (status, response) {
            (Some(status), Some(response)) => Claim::Replay {
                status: status as u16,
                response,
            },
            _ => Claim::Running,
        })
    }

    /// Keeps the response of a claimed key.
    pub async fn complete_idempotency_key(
        &self,
        caller: &str,
        key: &str,
        status: u16,
        response: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE idempotency SET status = $1, response = $2 WHERE caller = $3 AND key = $4",
        )
        .bind(i64::from(status))
        .bind(response)
        .bind(caller)
        .bind(key)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Records that relayer process `instance` is alive.
    pub async fn heartbeat_instance(&self, instance: &str, now: i64) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO instances (id, heartbeat_at) VALUES ($1, $2) \
             ON CONFLICT (id) DO UPDATE SET heartbeat_at = $2",
        )
        .bind(instance)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Forgets a claimed key whose request failed in a way a retry may cure (unavailable
    /// database or node).
    pub async fn release_idempotency_key(&self, caller: &str, key: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM idempotency WHERE caller = $1 AND key = $2 AND status IS NULL")
            .bind(caller)
            .bind(key)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
