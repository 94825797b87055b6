//! The only place with SQL. One schema, two databases: SQLite (a file, the default) and
//! PostgreSQL (`postgres://…`), each with its own migrations (`migrations/sqlite`,
//! `migrations/postgres`); see [`bursar_db`] for how queries mean the same on both.

mod agents;
mod allowlists;
mod channels;
mod engine;
mod feedback;
mod hosts;
mod idempotency;
mod keys;
mod lifecycle;
mod payments;
mod provenance;
mod sessions;
mod webhooks;
mod x402;

// MIGRATIONS_SQLITE and MIGRATIONS_POSTGRES, embedded by the build script.
include!(concat!(env!("OUT_DIR"), "/migrations.rs"));

use sqlx::AnyPool;
use sqlx::Row;

pub(crate) use bursar_db::{placeholders, ROWS_PER_INSERT};
pub use bursar_db::{Backend, DbTx};

pub use agents::{AgentRow, NewAgent};
pub use allowlists::AllowlistRow;
pub use channels::{ChannelRow, DepositRow, DepositStatus, VoucherRow};
pub use engine::{AttemptRow, NewAttempt, NewTransaction, TxRow, TxStatus};
pub use feedback::{FeedbackOutcome, FeedbackRow, NewFeedback};
pub use hosts::HostKeyRow;
pub use idempotency::Claim;
pub use keys::{provider_secret_aad, SealedKeyRow};
pub use lifecycle::{ChargeRow, LifecycleRow, NewLifecycleEvent};
pub use payments::{NewPayment, PaymentOutcome, PaymentRow, PaymentStatus, Unmined};
pub use provenance::{ProvenanceOutcome, ProvenanceRow};
pub use sessions::{NewSession, OpenStatus, SessionRow, SessionTx, WindDown};
pub use webhooks::{DeliveryRow, EndpointRow};
pub use x402::SettlementTurn;

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

/// Column `name` of `r`, stored as text (an address, an amount, a hash), parsed: the one place
/// such a value is read, so a row that leaves the store holds it typed.
pub(crate) fn parsed<T: std::str::FromStr>(
    r: &sqlx::any::AnyRow,
    name: &str,
) -> Result<T, StoreError> {
    let text: String = r.try_get(name)?;
    text.parse()
        .map_err(|_| StoreError::Corrupt(format!("{name} {text:?}")))
}

/// [`parsed`] of a column that may be NULL.
pub(crate) fn parsed_opt<T: std::str::FromStr>(
    r: &sqlx::any::AnyRow,
    name: &str,
) -> Result<Option<T>, StoreError> {
    let text: Option<String> = r.try_get(name)?;
    text.map(|t| {
        t.parse()
            .map_err(|_| StoreError::Corrupt(format!("{name} {t:?}")))
    })
    .transpose()
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        StoreError::Db(e.into())
    }
}

/// The relayer's database.
#[derive(Clone, Debug)]
pub struct Store {
    /// Every write, and reads that must see a transaction's own writes.
    pool: AnyPool,
    /// Plain reads. On SQLite, other connections than the one writer: in WAL mode readers
    /// never wait for the writer, so a handler's lookup does not queue behind a batch of
    /// payments being stored. On PostgreSQL, the same pool.
    read: AnyPool,
    backend: Backend,
}

impl Store {
    /// Connects to `url` (`sqlite://FILE`, created if missing, or `postgres://…`) and brings
    /// the schema up to date.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let pools = bursar_db::connect(
            url,
            MIGRATIONS_SQLITE,
            MIGRATIONS_POSTGRES,
            bursar_db::Durability::PowerLoss,
        )
        .await?;
        Ok(Store {
            pool: pools.write,
            read: pools.read,
            backend: pools.backend,
        })
    }

    /// The database this store runs on.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Starts a database transaction.
    pub async fn begin(&self) -> Result<DbTx, StoreError> {
        Ok(self.pool.begin().await?)
    }

    /// Whether the database answers.
    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }
}

/// A column that hands out consecutive numbers per row.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Counter {
    /// `signers.next_nonce`: a signer's transaction nonces.
    SignerNonce,
    /// `sessions.next_intent_nonce`: a custodial session key's intent nonces.
    IntentNonce,
}

/// A `VALUES` list of `rows` (text, integer) pairs, `$1, $2` then `$3, $4` and so on, cast so
/// that both databases type them alike; both name its columns `column1` and `column2`.
pub(crate) fn text_and_number_values(rows: usize) -> String {
    (0..rows)
        .map(|i| {
            format!(
                "(CAST(${} AS TEXT), CAST(${} AS BIGINT))",
                2 * i + 1,
                2 * i + 2
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Takes the next number of `counter` for each of `keys` (one row key per item; a key named
/// several times gets consecutive numbers, in the order named), inside `db`, in one statement
/// however many rows there are.
pub(crate) async fn take_numbers(
    db: &mut DbTx,
    counter: Counter,
    keys: &[&str],
) -> Result<Vec<i64>, StoreError> {
    let (table, key, column) = match counter {
        Counter::SignerNonce => ("signers", "address", "next_nonce"),
        Counter::IntentNonce => ("sessions", "id", "next_intent_nonce"),
    };
    let mut counts: Vec<(&str, i64)> = Vec::new();
    for k in keys {
        match counts.iter_mut().find(|(c, _)| c == k) {
            Some((_, n)) => *n += 1,
            None => counts.push((k, 1)),
        }
    }
    if counts.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "UPDATE {table} SET {column} = {column} + v.column2 FROM (VALUES {}) AS v \
         WHERE {key} = v.column1 RETURNING {key}, {column}",
        text_and_number_values(counts.len())
    );
    let mut q = sqlx::query(&sql);
    for (k, n) in &counts {
        q = q.bind(*k).bind(*n);
    }
    let mut next: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
    for r in q.fetch_all(&mut **db).await? {
        next.insert(r.try_get(0)?, r.try_get(1)?);
    }
    // Each key's first number, then counted up as the key comes round again.
    let mut first: std::collections::HashMap<&str, i64> = std::collections::HashMap::new();
    for (k, n) in &counts {
        let after = next
            .get(*k)
            .ok_or_else(|| StoreError::Corrupt(format!("no {table} row {k}")))?;
        first.insert(k, after - n);
    }
    Ok(keys
        .iter()
        .map(|k| {
            let n = first.get_mut(k).expect("counted above");
            *n += 1;
            *n - 1
        })
        .collect())
}

/// Milliseconds since the Unix epoch, as stored.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
