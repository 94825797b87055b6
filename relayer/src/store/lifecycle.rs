//! Sandboxes' lifecycle events, what they did to sessions, and sessions' sandbox state.

use alloy_primitives::U256;
use sqlx::Row;

use super::sessions::{session_row, SESSION_COLUMNS};
use super::{parsed, DbTx, SessionRow, Store, StoreError};

/// A lifecycle event to record.
pub struct NewLifecycleEvent<'a> {
    /// `lce_…`.
    pub id: &'a str,
    /// The host whose sandbox it is.
    pub host_id: &'a str,
    /// The provider (`e2b`…) or `api`.
    pub source: &'a str,
    /// The provider's id of the event.
    pub event_id: &'a str,
    /// The provider's id of the sandbox.
    pub sandbox_id: Option<&'a str>,
    /// The provider's name for it.
    pub kind: &'a str,
    /// What it means (`paused`…).
    pub lifecycle: &'a str,
    /// When it happened (unix seconds).
    pub at: i64,
    /// Echoed metadata and usage, JSON.
    pub report: &'a str,
}

/// A recorded lifecycle event and what it did to one session.
#[derive(Clone, Debug)]
pub struct LifecycleRow {
    /// `lce_…`.
    pub id: String,
    /// The provider or `api`.
    pub source: String,
    /// The provider's id of the event.
    pub event_id: String,
    /// The provider's name for it.
    pub kind: String,
    /// What it means.
    pub lifecycle: String,
    /// When it happened (unix seconds).
    pub at: i64,
    /// Echoed metadata and usage, JSON.
    pub report: String,
    /// What it did to the session.
    pub action: String,
    /// When the relayer received it (unix ms).
    pub received_at: i64,
}

impl Store {
    /// Records a lifecycle event inside `db`; `false` when the host already has an event of
    /// this source and id (a retried or replayed delivery), and nothing was written.
    pub async fn insert_lifecycle_event(
        db: &mut DbTx,
        e: &NewLifecycleEvent<'_>,
        now: i64,
    ) -> Result<bool, StoreError> {
        let n = sqlx::query(
            "INSERT INTO lifecycle_events (id, host_id, source, event_id, sandbox_id, kind, \
             lifecycle, at, report, received_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
             ON CONFLICT (host_id, source, event_id) DO NOTHING",
        )
        .bind(e.id)
        .bind(e.host_id)
        .bind(e.source)
        .bind(e.event_id)
        .bind(e.sandbox_id)
        .bind(e.kind)
        .bind(e.lifecycle)
        .bind(e.at)
        .bind(e.report)
        .bind(now)
        .execute(&mut **db)
        .await?
        .rows_affected();
        Ok(n == 1)
    }

    /// `host_id`'s sessions bound to `provider`'s sandbox `sandbox_id` at prepare, inside `db`.
    pub async fn sandbox_sessions(
        db: &mut DbTx,
        host_id: &str,
        provider: &str,
        sandbox_id: &str,
    ) -> Result<Vec<SessionRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions \
             WHERE host_id = $1 AND provider = $2 AND sandbox_id = $3 ORDER BY created_at"
        ))
        .bind(host_id)
        .bind(provider)
        .bind(sandbox_id)
        .fetch_all(&mut **db)
        .await?;
        rows.iter().map(session_row).collect()
    }

    /// Records what event `event` did to session `session_id` and the sandbox state it left,
    /// inside `db`; a session set winding down stays so, and its capability token dies.
    pub async fn apply_lifecycle(
        db: &mut DbTx,
        event: &str,
        session_id: &str,
        action: &str,
        state: Option<(&str, i64)>,
        wind_down: super::WindDown,
        now: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO lifecycle_actions (event, session_id, action) VALUES ($1, $2, $3)",
        )
        .bind(event)
        .bind(session_id)
        .bind(action)
        .execute(&mut **db)
        .await?;
        if let Some((state, at)) = state {
            sqlx::query(
                "UPDATE sessions SET sandbox_state = $1, sandbox_state_at = $2 WHERE id = $3",
            )
            .bind(state)
            .bind(at)
            .bind(session_id)
            .execute(&mut **db)
            .await?;
        }
        if wind_down != super::WindDown::No {
            sqlx::query(
                "UPDATE sessions SET winding_down = $1, \
                 capability_revoked_at = COALESCE(capability_revoked_at, $2) WHERE id = $3",
            )
            .bind(wind_down.code())
            .bind(now)
            .bind(session_id)
            .execute(&mut **db)
            .await?;
        }
        Ok(())
    }

    /// Session `session_id`'s lifecycle events, newest first, at most `limit`.
    pub async fn session_lifecycle(
        &self,
        session_id: &str,
        limit: i64,
    ) -> Result<Vec<LifecycleRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT e.id, e.source, e.event_id, e.kind, e.lifecycle, e.at, e.report, a.action, \
             e.received_at FROM lifecycle_actions a JOIN lifecycle_events e ON e.id = a.event \
             WHERE a.session_id = $1 ORDER BY e.received_at DESC, e.id LIMIT $2",
        )
        .bind(session_id)
        .bind(limit)
        .fetch_all(&self.read)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(LifecycleRow {
                    id: r.try_get("id")?,
                    source: r.try_get("source")?,
                    event_id: r.try_get("event_id")?,
                    kind: r.try_get("kind")?,
                    lifecycle: r.try_get("lifecycle")?,
                    at: r.try_get("at")?,
                    report: r.try_get("report")?,
                    action: r.try_get("action")?,
                    received_at: r.try_get("received_at")?,
                })
            })
            .collect()
    }

    /// Open sessions the relayer is winding down.
    pub async fn winding_down(&self) -> Result<Vec<SessionRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE winding_down <> 0 AND status = 'open'"
        ))
        .fetch_all(&self.read)
        .await?;
        rows.iter().map(session_row).collect()
    }

    /// Marks session `id` as wound down (closed on chain).
    pub async fn wound_down(&self, id: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE sessions SET winding_down = 0 WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Every (host id, provider) with a provider secret or API key.
    pub async fn provider_hosts(&self) -> Result<Vec<(String, String)>, StoreError> {
        let rows = sqlx::query("SELECT host_id, provider FROM provider_secrets ORDER BY host_id")
            .fetch_all(&self.read)
            .await?;
        rows.iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect()
    }

    /// `host_id`'s sessions bound to a sandbox of `provider` that are still live at unix
    /// seconds `now`: opening or open, not closed by the relayer, unexpired, their sandbox not
    /// terminated.
    pub async fn sessions_to_poll(
        &self,
        host_id: &str,
        provider: &str,
        now: i64,
    ) -> Result<Vec<SessionRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE host_id = $1 AND provider = $2 \
             AND sandbox_id IS NOT NULL AND status IN ('opening', 'open') \
             AND close_transaction IS NULL AND expires_at > $3 \
             AND (sandbox_state IS NULL OR sandbox_state <> 'terminated') ORDER BY created_at"
        ))
        .bind(host_id)
        .bind(provider)
        .bind(now)
        .fetch_all(&self.read)
        .await?;
        rows.iter().map(session_row).collect()
    }

    /// Lifecycle events recorded, by source: `(source, count)`.
    pub async fn lifecycle_counts(&self) -> Result<Vec<(String, i64)>, StoreError> {
        let rows = sqlx::query("SELECT source, COUNT(*) FROM lifecycle_events GROUP BY source")
            .fetch_all(&self.read)
            .await?;
        rows.iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect()
    }
}

/// A metering charge as stored.
#[derive(Clone, Debug)]
pub struct ChargeRow {
    /// The run charged.
    pub run: String,
    /// The run's cost charged in all with this charge.
    pub metered: U256,
    /// This charge.
    pub amount: U256,
    /// Its payment.
    pub payment_id: Option<String>,
    /// Why it has none. Neither: claimed, and being paid (or its process died paying it).
    pub error_code: Option<String>,
    /// What was charged (JSON).
    pub summary: String,
    /// When (unix ms).
    pub created_at: i64,
}

impl Store {
    /// Claims metering charge `c` of session `session_id`, taking its run from `from` (the
    /// run's total charged before, decimal) to `c.metered`: false when a charge from `from` is
    /// claimed already (by another process, or this charge before).
    pub async fn claim_charge(
        &self,
        session_id: &str,
        from: U256,
        c: &ChargeRow,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "INSERT INTO metering_charges (session_id, run, charged_from, metered, amount, \
             payment_id, error_code, summary, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING",
        )
        .bind(session_id)
        .bind(&c.run)
        .bind(from.to_string())
        .bind(c.metered.to_string())
        .bind(c.amount.to_string())
        .bind(&c.payment_id)
        .bind(&c.error_code)
        .bind(&c.summary)
        .bind(c.created_at)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Records how a claimed charge ended: its payment, or why it has none (the first record
    /// stands).
    pub async fn settle_charge(&self, session_id: &str, c: &ChargeRow) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE metering_charges SET payment_id = $4, error_code = $5 \
             WHERE session_id = $1 AND run = $2 AND metered = $3 \
             AND payment_id IS NULL AND error_code IS NULL",
        )
        .bind(session_id)
        .bind(&c.run)
        .bind(c.metered.to_string())
        .bind(&c.payment_id)
        .bind(&c.error_code)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Session `session_id`'s metering charges, oldest first.
    pub async fn charges(&self, session_id: &str) -> Result<Vec<ChargeRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT run, metered, amount, payment_id, error_code, summary, created_at \
             FROM metering_charges WHERE session_id = $1 ORDER BY created_at, run",
        )
        .bind(session_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(ChargeRow {
                    run: r.try_get("run")?,
                    metered: parsed(r, "metered")?,
                    amount: parsed(r, "amount")?,
                    payment_id: r.try_get("payment_id")?,
                    error_code: r.try_get("error_code")?,
                    summary: r.try_get("summary")?,
                    created_at: r.try_get("created_at")?,
                })
            })
            .collect()
    }
}
