//! Upgrades of stored rows that SQL migrations cannot write: run at every connect, each a no-op
//! once done.

use bursar_client::ids::canonical_session_id;
use sqlx::AnyPool;

use super::db::StoreError;

/// Session ids stored in decimal (by indexers before session ids had one written form)
/// rewritten as `0x` + 64 hex digits: the `session_id` of logs and spend sums, and the
/// `sessionId` in logs' `args`. One transaction; a session id is a keccak, never 0, so the
/// decimal ones are exactly those from `'1'` up in byte order (`'0x…'` sorts below), which the
/// session index finds without a scan. Answers how many sessions it rewrote.
pub(super) async fn hex_session_ids(pool: &AnyPool) -> Result<usize, StoreError> {
    let decimal: Vec<(String,)> =
        sqlx::query_as("SELECT DISTINCT session_id FROM logs WHERE session_id >= '1'")
            .fetch_all(pool)
            .await?;
    if decimal.is_empty() {
        return Ok(0);
    }
    let mut db = pool.begin().await?;
    for (old,) in &decimal {
        let new = canonical_session_id(old)
            .ok_or_else(|| StoreError::Corrupt(format!("session id {old:?}")))?;
        // `args` is serde_json's compact text, where the argument reads exactly so.
        sqlx::query(
            "UPDATE logs SET session_id = $1, args = REPLACE(args, $2, $3) WHERE session_id = $4",
        )
        .bind(&new)
        .bind(format!(r#""sessionId":"{old}""#))
        .bind(format!(r#""sessionId":"{new}""#))
        .bind(old)
        .execute(&mut *db)
        .await?;
        sqlx::query("UPDATE spend_by_hour SET session_id = $1 WHERE session_id = $2")
            .bind(&new)
            .bind(old)
            .execute(&mut *db)
            .await?;
    }
    db.commit().await?;
    Ok(decimal.len())
}
