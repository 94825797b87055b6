//! Where the services' tests keep their databases: a SQLite file in a temporary directory, or
//! a fresh database on the test PostgreSQL server (`BURSAR_TEST_POSTGRES_URL`, which
//! `cargo xtask test` and `.ci/run` set).

use std::sync::atomic::{AtomicU32, Ordering};

/// A test's database.
pub enum Db {
    /// A SQLite file (`name`) in a directory removed with it.
    Sqlite(tempfile::TempDir, &'static str),
    /// A PostgreSQL database's URL.
    Postgres(String),
}

impl Db {
    /// Its URL (`sqlite://…` or `postgres://…`).
    pub fn url(&self) -> String {
        match self {
            Db::Sqlite(dir, name) => format!("sqlite://{}", dir.path().join(name).display()),
            Db::Postgres(url) => url.clone(),
        }
    }
}

/// A SQLite file named `name` in a fresh temporary directory.
pub fn sqlite(name: &'static str) -> Db {
    Db::Sqlite(tempfile::tempdir().expect("a temporary directory"), name)
}

/// A fresh database on the test PostgreSQL server, named `<prefix><pid>_<n>`. Databases of
/// earlier test processes with the same prefix are dropped first (a crashed run leaves some).
pub async fn postgres(prefix: &str) -> Db {
    use sqlx::Connection;
    let base = std::env::var("BURSAR_TEST_POSTGRES_URL").expect(
        "BURSAR_TEST_POSTGRES_URL is not set: run `cargo xtask test` (it starts PostgreSQL) or \
         point it at a server whose user may create databases",
    );
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "{prefix}{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let mut admin = sqlx::PgConnection::connect(&base)
        .await
        .expect("the test PostgreSQL server");
    let ours = format!("{prefix}{}_%", std::process::id());
    let stale: Vec<String> = sqlx::query_scalar(
        "SELECT datname FROM pg_database WHERE datname ~ ('^' || $1 || '[0-9]+_') \
         AND datname NOT LIKE $2",
    )
    .bind(prefix)
    .bind(ours)
    .fetch_all(&mut admin)
    .await
    .expect("list databases");
    for db in stale {
        let drop = format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)");
        sqlx::Executor::execute(&mut admin, drop.as_str())
            .await
            .expect("drop a stale database");
    }
    sqlx::Executor::execute(&mut admin, format!("CREATE DATABASE {name}").as_str())
        .await
        .expect("create the test database");
    let (server, _) = base.rsplit_once('/').expect("a database URL");
    Db::Postgres(format!("{server}/{name}"))
}
