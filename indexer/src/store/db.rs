//! The indexer's database handle, and why a store call failed.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use bursar_db::Backend;
use sqlx::AnyPool;

/// Why the store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database refused, could not be reached, or could not be migrated.
    #[error(transparent)]
    Db(#[from] bursar_db::DbError),
    /// A stored value does not parse (the database was edited by hand?).
    #[error("corrupt row: {0}")]
    Corrupt(String),
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        StoreError::Db(e.into())
    }
}

/// The indexer's database.
#[derive(Clone, Debug)]
pub struct Store {
    pub(super) write: AnyPool,
    pub(super) read: AnyPool,
    pub(super) backend: Backend,
    /// Whether the logs are being bulk-loaded (see [`Store::begin_bulk`]).
    pub(super) bulk: Arc<AtomicBool>,
    /// On PostgreSQL, a connection of the PostgreSQL driver itself, for what `Any` lacks:
    /// `COPY`, which a bulk load's batches are written with.
    pub(super) copy: Option<sqlx::PgPool>,
}
