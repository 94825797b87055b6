//! The relayer against a running devnet (real WASM, real signatures), on a SQLite file and on a
//! PostgreSQL server (`BURSAR_TEST_POSTGRES_URL`, which `cargo xtask test` and `.ci/run` set).

/// Each named test, once on a SQLite file and once on PostgreSQL.
macro_rules! on_both_databases {
    ($($name:ident),* $(,)?) => {
        mod sqlite_db {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::sqlite()).await
                }
            )*
        }
        mod postgres_db {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::postgres().await).await
                }
            )*
        }
    };
}

mod agents;
mod allowlists;
mod api;
mod crash;
mod engine;
mod flow;
mod hostile;
mod lifecycle;
mod mcp;
mod once;
mod receiver;
mod vault;
mod x402;
mod x402_channels;
mod x402_exact;

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
    // With USDC and the other EVM contracts sessions meet on Arbitrum, as `bursar up` runs it.
    let handle = bursar_devnet::spawn(RpcConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        chain: bursar_devnet::ChainConfig {
            evm_fixtures: true,
            ..Default::default()
        },
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

use bursar_e2e::db::Db;

/// The relayer's store on a test database.
trait DbStore {
    async fn store(&self) -> Store;
}

impl DbStore for Db {
    async fn store(&self) -> Store {
        Store::connect(&self.url()).await.unwrap()
    }
}

fn sqlite() -> Db {
    bursar_e2e::db::sqlite("relayer.db")
}

async fn postgres() -> Db {
    bursar_e2e::db::postgres("bursar_t").await
}
