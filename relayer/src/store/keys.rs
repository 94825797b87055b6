//! Sealed custodial session keys, and the relayer's own keys for a purpose.

use sqlx::Row;

use super::{DbTx, Store, StoreError};

/// The associated data of host `host_id`'s sealed secret for `provider`: a sealed secret
/// opens only in its own row.
pub fn provider_secret_aad(host_id: &str, provider: &str) -> String {
    format!("provider:{host_id}:{provider}")
}

/// A sealed key as stored.
#[derive(Clone, Debug)]
pub struct SealedKeyRow {
    /// The key's address.
    pub address: String,
    /// The host it was made for.
    pub host_id: String,
    /// `hex(nonce ‖ ciphertext ‖ tag)`.
    pub sealed: String,
    /// The master key that sealed it.
    pub master_key_id: String,
}

impl Store {
    /// Stores a sealed session key.
    pub async fn insert_session_key(&self, row: &SealedKeyRow, now: i64) -> Result<(), StoreError> {
        let mut db = self.begin().await?;
        Self::insert_session_key_in(&mut db, row, now).await?;
        db.commit().await?;
        Ok(())
    }

    /// Stores a sealed session key inside `db`.
    pub(crate) async fn insert_session_key_in(
        db: &mut DbTx,
        row: &SealedKeyRow,
        now: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO session_keys (address, host_id, sealed, master_key_id, created_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(&row.address)
        .bind(&row.host_id)
        .bind(&row.sealed)
        .bind(&row.master_key_id)
        .bind(now)
        .execute(&mut **db)
        .await?;
        Ok(())
    }

    /// The sealed key of `address`.
    pub async fn session_key(&self, address: &str) -> Result<Option<SealedKeyRow>, StoreError> {
        let row = sqlx::query(
            "SELECT address, host_id, sealed, master_key_id FROM session_keys WHERE address = $1",
        )
        .bind(address)
        .fetch_optional(&self.read)
        .await?;
        row.as_ref().map(sealed_row).transpose()
    }

    /// Stores `row` as the key for `purpose` unless one is stored already; answers the one
    /// stored (this one, or another process's that came first).
    pub async fn relayer_key(
        &self,
        purpose: &str,
        row: &SealedKeyRow,
        now: i64,
    ) -> Result<SealedKeyRow, StoreError> {
        sqlx::query(
            "INSERT INTO relayer_keys (purpose, address, sealed, master_key_id, created_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (purpose) DO NOTHING",
        )
        .bind(purpose)
        .bind(&row.address)
        .bind(&row.sealed)
        .bind(&row.master_key_id)
        .bind(now)
        .execute(&self.pool)
        .await?;
        let stored = sqlx::query(
            "SELECT address, purpose, sealed, master_key_id FROM relayer_keys WHERE purpose = $1",
        )
        .bind(purpose)
        .fetch_one(&self.pool)
        .await?;
        sealed_row(&stored)
    }

    /// Re-seals every sealed secret (session keys, relayer keys and webhook secrets): `reseal` gets each
    /// one's associated data (the key's address, the endpoint's id) and sealed text and returns
    /// its new sealing, stored with `master_key_id`; all rows change in one database
    /// transaction, or none does. Returns how many were re-sealed.
    pub async fn reseal_all(
        &self,
        master_key_id: &str,
        mut reseal: impl FnMut(&str, &str) -> Result<String, StoreError>,
    ) -> Result<usize, StoreError> {
        let mut tx = self.pool.begin().await?;
        let keys: Vec<(String, String)> =
            sqlx::query_as("SELECT address, sealed FROM session_keys")
                .fetch_all(&mut *tx)
                .await?;
        for (address, sealed) in &keys {
            sqlx::query(
                "UPDATE session_keys SET sealed = $1, master_key_id = $2 WHERE address = $3",
            )
            .bind(reseal(address, sealed)?)
            .bind(master_key_id)
            .bind(address)
            .execute(&mut *tx)
            .await?;
        }
        let own: Vec<(String, String)> = sqlx::query_as("SELECT address, sealed FROM relayer_keys")
            .fetch_all(&mut *tx)
            .await?;
        for (address, sealed) in &own {
            sqlx::query(
                "UPDATE relayer_keys SET sealed = $1, master_key_id = $2 WHERE address = $3",
            )
            .bind(reseal(address, sealed)?)
            .bind(master_key_id)
            .bind(address)
            .execute(&mut *tx)
            .await?;
        }
        let secrets: Vec<(String, String)> =
            sqlx::query_as("SELECT id, sealed_secret FROM webhook_endpoints")
                .fetch_all(&mut *tx)
                .await?;
        for (id, sealed) in &secrets {
            sqlx::query(
                "UPDATE webhook_endpoints SET sealed_secret = $1, master_key_id = $2 WHERE id = $3",
            )
            .bind(reseal(id, sealed)?)
            .bind(master_key_id)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        }
        let providers: Vec<(String, String, String)> =
            sqlx::query_as("SELECT host_id, provider, sealed FROM provider_secrets")
                .fetch_all(&mut *tx)
                .await?;
        for (host_id, provider, sealed) in &providers {
            sqlx::query(
                "UPDATE provider_secrets SET sealed = $1, master_key_id = $2 \
                 WHERE host_id = $3 AND provider = $4",
            )
            .bind(reseal(&provider_secret_aad(host_id, provider), sealed)?)
            .bind(master_key_id)
            .bind(host_id)
            .bind(provider)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(keys.len() + own.len() + secrets.len() + providers.len())
    }
}

fn sealed_row(r: &sqlx::any::AnyRow) -> Result<SealedKeyRow, StoreError> {
    Ok(SealedKeyRow {
        address: r.try_get(0)?,
        host_id: r.try_get(1)?,
        sealed: r.try_get(2)?,
        master_key_id: r.try_get(3)?,
    })
}
