//! Webhook endpoints and deliveries.

use sqlx::any::AnyRow;
use sqlx::Row;

use super::{DbTx, Store, StoreError};

/// An endpoint as stored.
#[derive(Clone, Debug)]
pub struct EndpointRow {
    /// `wh_…`.
    pub id: String,
    /// Its host.
    pub host_id: String,
    /// Where deliveries go.
    pub url: String,
    /// Space-separated event types, or `*`.
    pub events: String,
    /// The sealed signing secret.
    pub sealed_secret: String,
    /// The master key that sealed it.
    pub master_key_id: String,
    /// When it was made (unix ms).
    pub created_at: i64,
    /// When the host deleted it.
    pub disabled_at: Option<i64>,
}

/// A delivery as stored.
#[derive(Clone, Debug)]
pub struct DeliveryRow {
    /// Its endpoint.
    pub endpoint_id: String,
    /// `webhook-id`.
    pub message_id: String,
    /// The event's type.
    pub event_type: String,
    /// The JSON body sent.
    pub payload: String,
    /// `pending`, `delivered` or `dead`.
    pub status: String,
    /// Attempts made.
    pub attempts: i64,
    /// When the next is due (unix ms).
    pub next_attempt_at: i64,
    /// The receiver's last HTTP status.
    pub last_status: Option<i64>,
    /// The last transport error.
    pub last_error: Option<String>,
    /// When it was emitted (unix ms).
    pub created_at: i64,
}

const ENDPOINT_COLUMNS: &str =
    "id, host_id, url, events, sealed_secret, master_key_id, created_at, disabled_at";

fn endpoint_row(r: &AnyRow) -> Result<EndpointRow, StoreError> {
    Ok(EndpointRow {
        id: r.try_get("id")?,
        host_id: r.try_get("host_id")?,
        url: r.try_get("url")?,
        events: r.try_get("events")?,
        sealed_secret: r.try_get("sealed_secret")?,
        master_key_id: r.try_get("master_key_id")?,
        created_at: r.try_get("created_at")?,
        disabled_at: r.try_get("disabled_at")?,
    })
}

const DELIVERY_COLUMNS: &str = "endpoint_id, message_id, event_type, payload, status, attempts, \
    next_attempt_at, last_status, last_error, created_at";

fn delivery_row(r: &AnyRow) -> Result<DeliveryRow, StoreError> {
    Ok(DeliveryRow {
        endpoint_id: r.try_get("endpoint_id")?,
        message_id: r.try_get("message_id")?,
        event_type: r.try_get("event_type")?,
        payload: r.try_get("payload")?,
        status: r.try_get("status")?,
        attempts: r.try_get("attempts")?,
        next_attempt_at: r.try_get("next_attempt_at")?,
        last_status: r.try_get("last_status")?,
        last_error: r.try_get("last_error")?,
        created_at: r.try_get("created_at")?,
    })
}

impl Store {
    /// Stores an endpoint.
    pub async fn insert_endpoint(&self, e: &EndpointRow) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO webhook_endpoints (id, host_id, url, events, sealed_secret, \
             master_key_id, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&e.id)
        .bind(&e.host_id)
        .bind(&e.url)
        .bind(&e.events)
        .bind(&e.sealed_secret)
        .bind(&e.master_key_id)
        .bind(e.created_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// `host_id`'s endpoints that are not deleted.
    pub async fn endpoints(&self, host_id: &str) -> Result<Vec<EndpointRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints \
             WHERE host_id = $1 AND disabled_at IS NULL ORDER BY created_at, id"
        ))
        .bind(host_id)
        .fetch_all(&self.read)
        .await?;
        rows.iter().map(endpoint_row).collect()
    }

    /// Endpoint `id` (deleted ones too).
    pub async fn endpoint(&self, id: &str) -> Result<Option<EndpointRow>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.read)
        .await?;
        row.as_ref().map(endpoint_row).transpose()
    }

    /// Deletes (disables) `host_id`'s endpoint `id`; `false` when it has none.
    pub async fn disable_endpoint(
        &self,
        host_id: &str,
        id: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        let n = sqlx::query(
            "UPDATE webhook_endpoints SET disabled_at = $1 \
             WHERE id = $2 AND host_id = $3 AND disabled_at IS NULL",
        )
        .bind(now)
        .bind(id)
        .bind(host_id)
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(n == 1)
    }

    /// Queues `payload` as message `message_id` for every live endpoint of `host_id` that
    /// takes `event_type`. Emitting the same message again adds nothing.
    pub async fn emit(
        &self,
        host_id: &str,
        message_id: &str,
        event_type: &str,
        payload: &str,
        now: i64,
    ) -> Result<u64, StoreError> {
        insert_deliveries(&self.pool, host_id, message_id, event_type, payload, now).await
    }

    /// [`Store::emit`] inside `db`: the message is queued if and only if `db` commits.
    pub async fn emit_in(
        db: &mut DbTx,
        host_id: &str,
        message_id: &str,
        event_type: &str,
        payload: &str,
        now: i64,
    ) -> Result<u64, StoreError> {
        insert_deliveries(&mut **db, host_id, message_id, event_type, payload, now).await
    }

    /// Deliveries due now, oldest first.
    pub async fn due_deliveries(
        &self,
        now: i64,
        limit: i64,
    ) -> Result<Vec<DeliveryRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries \
             WHERE status = 'pending' AND next_attempt_at <= $1 \
             ORDER BY next_attempt_at, created_at LIMIT $2"
        ))
        .bind(now)
        .bind(limit)
        .fetch_all(&self.read)
        .await?;
        rows.iter().map(delivery_row).collect()
    }

    /// An endpoint's deliveries, newest first, optionally in one status.
    pub async fn deliveries(
        &self,
        endpoint_id: &str,
        status: Option<&str>,
        limit: i64,
    ) -> Result<Vec<DeliveryRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries \
             WHERE endpoint_id = $1 AND ($2 IS NULL OR status = $2) \
             ORDER BY created_at DESC, message_id LIMIT $3"
        ))
        .bind(endpoint_id)
        .bind(status)
        .bind(limit)
        .fetch_all(&self.read)
        .await?;
        rows.iter().map(delivery_row).collect()
    }

    /// Records an attempt: delivered, or the next attempt's time, or dead.
    #[allow(clippy::too_many_arguments)]
    pub async fn record_attempt(
        &self,
        endpoint_id: &str,
        message_id: &str,
        status: &str,
        next_attempt_at: i64,
        http_status: Option<i64>,
        error: Option<&str>,
        now: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE webhook_deliveries SET status = $1, attempts = attempts + 1, \
             next_attempt_at = $2, last_status = $3, last_error = $4, \
             delivered_at = CASE WHEN $1 = 'delivered' THEN $5 ELSE delivered_at END \
             WHERE endpoint_id = $6 AND message_id = $7",
        )
        .bind(status)
        .bind(next_attempt_at)
        .bind(http_status)
        .bind(error)
        .bind(now)
        .bind(endpoint_id)
        .bind(message_id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// How many deliveries are in each status.
    pub async fn delivery_counts(&self) -> Result<Vec<(String, i64)>, StoreError> {
        Ok(
            sqlx::query_as("SELECT status, COUNT(*) FROM webhook_deliveries GROUP BY status")
                .fetch_all(&self.read)
                .await?,
        )
    }

    /// Sends a delivery again from its first attempt; `false` when there is none.
    pub async fn replay_delivery(
        &self,
        endpoint_id: &str,
        message_id: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        let n = sqlx::query(
            "UPDATE webhook_deliveries SET status = 'pending', attempts = 0, next_attempt_at = $1 \
             WHERE endpoint_id = $2 AND message_id = $3",
        )
        .bind(now)
        .bind(endpoint_id)
        .bind(message_id)
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(n == 1)
    }
}

async fn insert_deliveries<'e>(
    db: impl sqlx::Executor<'e, Database = sqlx::Any>,
    host_id: &str,
    message_id: &str,
    event_type: &str,
    payload: &str,
    now: i64,
) -> Result<u64, StoreError> {
    let n = sqlx::query(
        "INSERT INTO webhook_deliveries (endpoint_id, message_id, event_type, payload, status, \
         attempts, next_attempt_at, created_at) \
         SELECT id, $1, $2, $3, 'pending', 0, $4, $4 FROM webhook_endpoints \
         WHERE host_id = $5 AND disabled_at IS NULL \
         AND (events = '*' OR (' ' || events || ' ') LIKE ('% ' || $2 || ' %')) \
         ON CONFLICT (endpoint_id, message_id) DO NOTHING",
    )
    .bind(message_id)
    .bind(event_type)
    .bind(payload)
    .bind(now)
    .bind(host_id)
    .execute(db)
    .await?
    .rows_affected();
    Ok(n)
}
