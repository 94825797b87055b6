//! The relayer against a running devnet (real WASM, real signatures), on a SQLite file and on a
//! PostgreSQL server (`BURSAR_TEST_POSTGRES_URL`, which `cargo xtask test` and `.ci/run` set).

mod api;
mod crash;
mod engine;
mod flow;
mod receiver;
mod vault;

use std::sync::Arc;

use bursar_client::{Client, Key};
use bursar_devnet::{accounts::dev_accounts, RpcConfig};
use bursar_relayer::store::Store;

/// Every log line of every test in this binary, at debug level, for the tests that check no
/// secret is ever logged.
static LOGS: std::sync::Mutex<Vec<u8>> = std::sync::Mutex::new(Vec::new());

/// The log so far, as text.
fn captured_logs() -> String {
    String::from_utf8_lossy(&LOGS.lock().unwrap()).into_owned()
}

/// Writes a log line to the captured log and to the test's output (shown for failing tests).
struct Tee;

impl std::io::Write for Tee {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOGS.lock().unwrap().extend_from_slice(buf);
        print!("{}", String::from_utf8_lossy(buf));
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("debug"))
        .with_ansi(false)
        .with_writer(|| Tee)
        .try_init();
}

/// A devnet with automine as given, and a client for it.
async fn devnet(automine: bool) -> (bursar_devnet::Handle, Arc<Client>) {
    logs();
    let handle = bursar_devnet::spawn(RpcConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        ..Default::default()
    })
    .await
    .unwrap();
    let client = Arc::new(Client::new(handle.url.clone()));
    if !automine {
        let _: serde_json::Value = client
            .request("evm_setAutomine", serde_json::json!([false]))
            .await
            .unwrap();
    }
    (handle, client)
}

fn dev_key(i: usize) -> Key {
    Key::from_signing_key(dev_accounts()[i].signing_key())
}

/// Where a test keeps its database.
enum Db {
    Sqlite(tempfile::TempDir),
    Postgres(String),
}

impl Db {
    fn url(&self) -> String {
        match self {
            Db::Sqlite(dir) => format!("sqlite://{}", dir.path().join("relayer.db").display()),
            Db::Postgres(url) => url.clone(),
        }
    }

    async fn store(&self) -> Store {
        Store::connect(&self.url()).await.unwrap()
    }
}

fn sqlite() -> Db {
    Db::Sqlite(tempfile::tempdir().unwrap())
}

/// A fresh database on the test PostgreSQL server.
async fn postgres() -> Db {
    use sqlx::Connection;
    let base = std::env::var("BURSAR_TEST_POSTGRES_URL").expect(
        "BURSAR_TEST_POSTGRES_URL is not set: run `cargo xtask test` (it starts PostgreSQL) or \
         point it at a server whose user may create databases",
    );
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let name = format!(
        "bursar_t{}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        bursar_relayer::store::now_ms()
    );
    let mut admin = sqlx::PgConnection::connect(&base).await.unwrap();
    // Databases earlier test processes left behind go first.
    let ours = format!("bursar_t{}_%", std::process::id());
    let stale: Vec<String> = sqlx::query_scalar(
        "SELECT datname FROM pg_database WHERE datname ~ '^bursar_t[0-9]+_' AND datname NOT LIKE $1",
    )
    .bind(ours)
    .fetch_all(&mut admin)
    .await
    .unwrap();
    for db in stale {
        let drop = format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)");
        sqlx::Executor::execute(&mut admin, drop.as_str())
            .await
            .unwrap();
    }
    sqlx::Executor::execute(&mut admin, format!("CREATE DATABASE {name}").as_str())
        .await
        .unwrap();
    let (prefix, _) = base.rsplit_once('/').unwrap();
    Db::Postgres(format!("{prefix}/{name}"))
}
