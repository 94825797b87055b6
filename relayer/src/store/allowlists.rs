//! Allowlists hosts created through the relayer: which host, which signer owns each on chain,
//! and its id once known.

use alloy_primitives::{Address, U256};
use sqlx::Row;

use super::{DbTx, Store, StoreError};

/// An allowlist a host created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllowlistRow {
    /// The engine's transaction that creates it.
    pub create_transaction: i64,
    /// The host's.
    pub host_id: String,
    /// The relayer signer that owns it on chain.
    pub signer: Address,
    /// The registry's id, once the creation is mined.
    pub list_id: Option<U256>,
    /// Unix ms.
    pub created_at: i64,
}

const COLUMNS: &str = "create_transaction, host_id, signer, list_id, created_at";

fn allowlist_row(r: &sqlx::any::AnyRow) -> Result<AllowlistRow, StoreError> {
    let corrupt = |what: &str| StoreError::Corrupt(format!("allowlist: {what}"));
    let signer: String = r.try_get("signer")?;
    let list_id: Option<String> = r.try_get("list_id")?;
    Ok(AllowlistRow {
        create_transaction: r.try_get("create_transaction")?,
        host_id: r.try_get("host_id")?,
        signer: signer.parse().map_err(|_| corrupt("signer"))?,
        list_id: list_id
            .map(|id| id.parse().map_err(|_| corrupt("list id")))
            .transpose()?,
        created_at: r.try_get("created_at")?,
    })
}

impl Store {
    /// Records, inside `db`, that `host` creates an allowlist with transaction `tx` sent by
    /// `signer`.
    pub async fn insert_allowlist(
        db: &mut DbTx,
        tx: i64,
        host: &str,
        signer: Address,
        now: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO allowlists (create_transaction, host_id, signer, created_at) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(tx)
        .bind(host)
        .bind(format!("{signer:#x}"))
        .bind(now)
        .execute(&mut **db)
        .await?;
        Ok(())
    }

    /// The list created by transaction `tx` is `list_id`.
    pub async fn set_allowlist_id(&self, tx: i64, list_id: U256) -> Result<(), StoreError> {
        sqlx::query("UPDATE allowlists SET list_id = $1 WHERE create_transaction = $2")
            .bind(list_id.to_string())
            .bind(tx)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// `host`'s allowlists, newest first.
    pub async fn host_allowlists(&self, host: &str) -> Result<Vec<AllowlistRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM allowlists WHERE host_id = $1 ORDER BY created_at DESC"
        ))
        .bind(host)
        .fetch_all(&self.read)
        .await?;
        rows.iter().map(allowlist_row).collect()
    }

    /// `host`'s allowlist `list_id`.
    pub async fn host_allowlist(
        &self,
        host: &str,
        list_id: U256,
    ) -> Result<Option<AllowlistRow>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM allowlists WHERE host_id = $1 AND list_id = $2"
        ))
        .bind(host)
        .bind(list_id.to_string())
        .fetch_optional(&self.read)
        .await?;
        row.as_ref().map(allowlist_row).transpose()
    }
}
