//! The databases Bursar's services (relayer, indexer) run on: a SQLite file by default,
//! PostgreSQL (`postgres://…`) at scale. Queries run through sqlx's `Any` driver and are
//! written to mean the same on both (`$n` placeholders in order, `RETURNING`, integers as
//! `BIGINT`); each service keeps its own migrations per database.
//!
//! On SQLite, writes go through one connection (SQLite has one writer at a time: one
//! connection serializes writes instead of failing them with "database is locked") and plain
//! reads through others: in WAL mode readers never wait for the writer.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::error::BoxDynError;
use sqlx::migrate::{Migration, MigrationSource, MigrationType, Migrator};
use sqlx::AnyPool;

/// A database transaction: what several writes that must land together share.
pub type DbTx = sqlx::Transaction<'static, sqlx::Any>;

/// Why the database could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The database refused or could not be reached.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// A migration failed.
    #[error("database migration: {0}")]
    Migration(#[from] sqlx::migrate::MigrateError),
    /// The URL names neither SQLite nor PostgreSQL.
    #[error("unsupported database URL (want sqlite://FILE or postgres://…)")]
    UnsupportedUrl,
}

/// Which database a service runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// A SQLite file.
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
}

/// The connections to one database.
#[derive(Clone, Debug)]
pub struct Pools {
    /// Every write, and reads that must see a transaction's own writes.
    pub write: AnyPool,
    /// Plain reads: on SQLite, other connections than the one writer, so a lookup never
    /// queues behind a long write transaction; on PostgreSQL, the same pool.
    pub read: AnyPool,
    /// Which database.
    pub backend: Backend,
}

/// What a commit must survive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Power loss: the commit is on disk before it returns (the relayer, whose rows are
    /// promises made to hosts).
    PowerLoss,
    /// The process crashing, not the machine: a commit may be lost with the power, never
    /// half-applied (the indexer, which reads whatever it lost from the chain again — its
    /// checkpoint is in the same transactions). Commits then wait for no disk flush, and
    /// SQLite is set up for bulk writes of large rows.
    ProcessCrash,
}

/// A service's migrations for one database, embedded at compile time: `(file name, SQL)` in
/// order, file names `<version>_<description>.sql` as sqlx reads them. A service's build
/// script writes them (`crates/db/build/embed_migrations.rs`); they are read as sqlx reads a
/// migrations directory, so the checksums recorded in a database are the same.
#[derive(Clone, Copy, Debug)]
pub struct Migrations(pub &'static [(&'static str, &'static str)]);

type Resolved<'s> = Pin<Box<dyn Future<Output = Result<Vec<Migration>, BoxDynError>> + Send + 's>>;

impl<'s> MigrationSource<'s> for Migrations {
    fn resolve(self) -> Resolved<'s> {
        Box::pin(async move {
            self.0
                .iter()
                .map(|(name, sql)| {
                    let (version, rest) = name
                        .split_once('_')
                        .ok_or_else(|| format!("migration {name:?} is not <version>_<name>.sql"))?;
                    let version: i64 = version
                        .parse()
                        .map_err(|_| format!("migration {name:?}: the version is not a number"))?;
                    let description = rest.trim_end_matches(".sql").replace('_', " ");
                    let no_tx = sql.starts_with("-- no-transaction");
                    Ok(Migration::new(
                        version,
                        Cow::Owned(description),
                        MigrationType::Simple,
                        Cow::Borrowed(*sql),
                        no_tx,
                    ))
                })
                .collect()
        })
    }
}

/// Connects to `url` (`sqlite://FILE`, created if missing, or `postgres://…`) and runs the
/// migrations for its database.
pub async fn connect(
    url: &str,
    sqlite: Migrations,
    postgres: Migrations,
    durability: Durability,
) -> Result<Pools, DbError> {
    sqlx::any::install_default_drivers();
    let backend = if url.starts_with("sqlite:") {
        Backend::Sqlite
    } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        Backend::Postgres
    } else {
        return Err(DbError::UnsupportedUrl);
    };
    let options = match backend {
        // Create the file if missing.
        Backend::Sqlite => {
            let sep = if url.contains('?') { '&' } else { '?' };
            AnyConnectOptions::from_str(&format!("{url}{sep}mode=rwc"))?
        }
        Backend::Postgres => AnyConnectOptions::from_str(url)?,
    };
    let max = if backend == Backend::Sqlite { 1 } else { 8 };
    let write = open(backend, max, options.clone(), durability, "").await?;
    let migrations = match backend {
        Backend::Sqlite => sqlite,
        Backend::Postgres => postgres,
    };
    Migrator::new(migrations).await?.run(&write).await?;
    let read = match backend {
        Backend::Sqlite => {
            // Readers map the file (up to SQLite's 2 GiB cap) instead of copying each page
            // into their own cache: a query's rows are scattered over a file far larger than
            // any page cache (a timeline page of 100 logs among 1,000,000 touches 100 pages).
            let pragmas = "PRAGMA query_only = 1; PRAGMA mmap_size = 2147418112;";
            open(backend, 4, options, durability, pragmas).await?
        }
        Backend::Postgres => write.clone(),
    };
    Ok(Pools {
        write,
        read,
        backend,
    })
}

/// A pool of at most `max` connections, each set up for `backend` and `durability` and then
/// given `pragmas` (SQLite).
async fn open(
    backend: Backend,
    max: u32,
    options: AnyConnectOptions,
    durability: Durability,
    pragmas: &'static str,
) -> Result<AnyPool, DbError> {
    let setup = match (backend, durability) {
        // A write-ahead log: a commit appends to one file and syncs it (FULL: a commit
        // survives power loss, not only a crash); wait for a busy database rather than fail.
        (Backend::Sqlite, Durability::PowerLoss) => {
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 5000;"
        }
        // For bulk writes of kilobyte rows (the indexer's logs): 16 KiB pages (set before the
        // first table, else ignored), the log synced only at checkpoints (NORMAL), a 64 MiB
        // page cache per connection (the default is 2 MiB), and checkpoints every 40,000 pages
        // instead of 1,000, in fewer, longer runs (4,000: 53,000 -> 45,000 logs/s at a million).
        (Backend::Sqlite, Durability::ProcessCrash) => {
            "PRAGMA page_size = 16384; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
             PRAGMA cache_size = -65536; PRAGMA wal_autocheckpoint = 40000; \
             PRAGMA busy_timeout = 5000;"
        }
        (Backend::Postgres, Durability::PowerLoss) => "",
        (Backend::Postgres, Durability::ProcessCrash) => "SET synchronous_commit = off;",
    };
    Ok(AnyPoolOptions::new()
        .max_connections(max)
        .after_connect(move |conn, _| {
            Box::pin(async move {
                for sql in [setup, pragmas] {
                    if !sql.is_empty() {
                        sqlx::Executor::execute(&mut *conn, sql).await?;
                    }
                }
                Ok(())
            })
        })
        .connect_with(options)
        .await?)
}

/// Rows per multi-row `INSERT` (SQLite allows 32,766 parameters in a statement, PostgreSQL
/// 65,535).
pub const ROWS_PER_INSERT: usize = 256;

/// The `VALUES` list of a multi-row `INSERT` of `rows` rows of `cols` values, for `db`'s
/// database: `($1, …), (…)` on PostgreSQL, `(?, …), (…)` on SQLite — where numbered parameters
/// cost a scan of the statement's parameter names per bind (quadratic in a 4,000-parameter
/// insert). The statement must have no other parameters.
pub fn placeholders(db: &sqlx::AnyConnection, rows: usize, cols: usize) -> String {
    numbered(db.backend_name() != "SQLite", rows, cols)
}

fn numbered(numbered: bool, rows: usize, cols: usize) -> String {
    let mut s = String::with_capacity(rows * cols * 5);
    for r in 0..rows {
        s.push_str(if r == 0 { "(" } else { ", (" });
        for c in 0..cols {
            if c > 0 {
                s.push_str(", ");
            }
            if numbered {
                s.push_str(&format!("${}", r * cols + c + 1));
            } else {
                s.push('?');
            }
        }
        s.push(')');
    }
    s
}

#[cfg(test)]
mod tests {
    use sqlx::migrate::MigrationSource;

    #[tokio::test]
    async fn embedded_migrations_read_as_sqlx_reads_a_directory() {
        const SQL: &str = "CREATE TABLE t (x BIGINT);";
        let read = super::Migrations(&[
            ("0001_first_table.sql", SQL),
            ("0012_x.sql", "-- no-transaction\nVACUUM;"),
        ])
        .resolve()
        .await
        .unwrap();
        assert_eq!((read[0].version, &*read[0].description), (1, "first table"));
        assert_eq!((read[1].version, read[1].no_tx), (12, true));
        let from_dir = sqlx::migrate::Migration::new(
            1,
            "first table".into(),
            sqlx::migrate::MigrationType::Simple,
            SQL.into(),
            false,
        );
        assert_eq!(
            read[0].checksum, from_dir.checksum,
            "the checksum sqlx records"
        );
        let names_without_a_version = [
            super::Migrations(&[("first.sql", SQL)]),
            super::Migrations(&[("x_first.sql", SQL)]),
        ];
        for bad in names_without_a_version {
            assert!(bad.resolve().await.is_err(), "{bad:?}");
        }
    }

    #[test]
    fn placeholders_number_rows_in_order() {
        assert_eq!(super::numbered(true, 2, 3), "($1, $2, $3), ($4, $5, $6)");
        assert_eq!(super::numbered(true, 1, 1), "($1)");
        assert_eq!(super::numbered(false, 2, 2), "(?, ?), (?, ?)");
    }
}
