//! Hosts and their API keys (stored as SHA-256 hashes).

use sqlx::Row;

use super::{Store, StoreError};

/// A host's API key as stored: never the key itself.
#[derive(Clone, Debug)]
pub struct HostKeyRow {
    /// The host it belongs to.
    pub host_id: String,
    /// The host's name.
    pub host_name: String,
    /// The key's first characters (not secret), to tell keys apart.
    pub key_prefix: String,
    /// Space-separated scopes.
    pub scopes: String,
    /// When it was created (unix ms).
    pub created_at: i64,
    /// When it was revoked, if it was.
    pub revoked_at: Option<i64>,
}

impl Store {
    /// Records host `id` named `name` with its first key.
    pub async fn insert_host(
        &self,
        id: &str,
        name: &str,
        key_hash: &str,
        key_prefix: &str,
        scopes: &str,
        now: i64,
    ) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("INSERT INTO hosts (id, name, created_at) VALUES ($1, $2, $3)")
            .bind(id)
            .bind(name)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO host_keys (key_hash, key_prefix, host_id, scopes, created_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(key_hash)
        .bind(key_prefix)
        .bind(id)
        .bind(scopes)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// The live (unrevoked) key with this hash.
    pub async fn host_key(&self, key_hash: &str) -> Result<Option<HostKeyRow>, StoreError> {
        let row = sqlx::query(&format!(
            "{HOST_KEY_SELECT} WHERE k.key_hash = $1 AND k.revoked_at IS NULL"
        ))
        .bind(key_hash)
        .fetch_optional(&self.read)
        .await?;
        row.as_ref().map(host_key_row).transpose()
    }

    /// Every key of every host, oldest first.
    pub async fn host_keys(&self) -> Result<Vec<HostKeyRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "{HOST_KEY_SELECT} ORDER BY k.created_at, k.key_prefix"
        ))
        .fetch_all(&self.read)
        .await?;
        rows.iter().map(host_key_row).collect()
    }

    /// Revokes every key of the host named `name`; returns how many were live.
    pub async fn revoke_host(&self, name: &str, now: i64) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "UPDATE host_keys SET revoked_at = $1 WHERE revoked_at IS NULL AND host_id IN \
             (SELECT id FROM hosts WHERE name = $2)",
        )
        .bind(now)
        .bind(name)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// Whether a host is named `name`.
    pub async fn host_exists(&self, name: &str) -> Result<bool, StoreError> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM hosts WHERE name = $1")
            .bind(name)
            .fetch_one(&self.read)
            .await?;
        Ok(n > 0)
    }

    /// The name of host `id`.
    pub async fn host_name(&self, id: &str) -> Result<Option<String>, StoreError> {
        Ok(sqlx::query_scalar("SELECT name FROM hosts WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.read)
            .await?)
    }

    /// The id of the host named `name` (the first created, if several share it).
    pub async fn host_id(&self, name: &str) -> Result<Option<String>, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT id FROM hosts WHERE name = $1 ORDER BY created_at LIMIT 1")
                .bind(name)
                .fetch_optional(&self.read)
                .await?,
        )
    }

    /// Stores (or replaces) `host_id`'s sealed secret for `provider`.
    pub async fn set_provider_secret(
        &self,
        host_id: &str,
        provider: &str,
        sealed: &str,
        master_key_id: &str,
        now: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO provider_secrets (host_id, provider, sealed, master_key_id, created_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (host_id, provider) DO UPDATE SET \
             sealed = excluded.sealed, master_key_id = excluded.master_key_id, \
             created_at = excluded.created_at",
        )
        .bind(host_id)
        .bind(provider)
        .bind(sealed)
        .bind(master_key_id)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// `host_id`'s sealed secret for `provider`, if set.
    pub async fn provider_secret(
        &self,
        host_id: &str,
        provider: &str,
    ) -> Result<Option<String>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT sealed FROM provider_secrets WHERE host_id = $1 AND provider = $2",
        )
        .bind(host_id)
        .bind(provider)
        .fetch_optional(&self.read)
        .await?)
    }

    /// Host `host_id`'s lifecycle policy (JSON), if it set one.
    pub async fn host_policy(&self, host_id: &str) -> Result<Option<String>, StoreError> {
        let policy: Option<Option<String>> =
            sqlx::query_scalar("SELECT policy FROM hosts WHERE id = $1")
                .bind(host_id)
                .fetch_optional(&self.read)
                .await?;
        Ok(policy.flatten())
    }

    /// Sets host `host_id`'s lifecycle policy (JSON).
    pub async fn set_host_policy(&self, host_id: &str, policy: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE hosts SET policy = $1 WHERE id = $2")
            .bind(policy)
            .bind(host_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}

const HOST_KEY_SELECT: &str = "SELECT k.host_id, h.name, k.key_prefix, k.scopes, k.created_at, \
    k.revoked_at FROM host_keys k JOIN hosts h ON h.id = k.host_id";

fn host_key_row(r: &sqlx::any::AnyRow) -> Result<HostKeyRow, StoreError> {
    Ok(HostKeyRow {
        host_id: r.try_get(0)?,
        host_name: r.try_get(1)?,
        key_prefix: r.try_get(2)?,
        scopes: r.try_get(3)?,
        created_at: r.try_get(4)?,
        revoked_at: r.try_get(5)?,
    })
}
