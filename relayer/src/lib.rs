//! # Bursar relayer
//!
//! The HTTP API sandbox hosts and agents use to open sessions and pay without holding keys or
//! ETH, on a transaction engine that never loses or duplicates a transaction.
//!
//! * [`api`] — the HTTP handlers (thin: extract, call one domain function, answer).
//! * [`hosts`] — hosts' API keys, scopes and authentication.
//! * [`submission`] — the transaction engine: nonces, persistence before broadcast,
//!   resubmission, replacement, confirmation.
//! * [`vault`] — custodial session keys, sealed under the master key.
//! * [`store`] — the only place with SQL (SQLite or PostgreSQL).
//! * [`error`] — the API's one error type and its JSON.
//! * [`metrics`] — Prometheus text.

pub mod api;
pub mod error;
pub mod hosts;
pub mod metrics;
pub mod store;
pub mod submission;
pub mod vault;

use std::net::SocketAddr;
use std::sync::Arc;

use bursar_client::{Client, Key};

use crate::store::{Store, StoreError};
use crate::submission::{Engine, EngineConfig, EngineError};

/// `N` bytes from the operating system's CSPRNG (keys, ids, nonces).
pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut bytes);
    bytes
}

/// What a relayer runs with.
pub struct Config {
    /// The chain's JSON-RPC endpoint.
    pub rpc: String,
    /// `sqlite://FILE` or `postgres://…`.
    pub db: String,
    /// Where the API listens (port 0: any free port).
    pub listen: SocketAddr,
    /// The relayer's own keys, which send its transactions and pay their gas.
    pub signers: Vec<Key>,
    /// How the engine paces itself.
    pub engine: EngineConfig,
}

/// Why the relayer did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The database.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The engine (the node, at reconciliation).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The listening socket.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// No signer key was given.
    #[error("no signer key: give --signer-key-file or BURSAR_RELAYER_KEYS")]
    NoSigner,
}

/// A running relayer: its API and its engine.
pub struct Relayer {
    /// The address the API listens on.
    pub addr: SocketAddr,
    stop: tokio::sync::watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Relayer {
    /// Stops the API and the engine and waits for both.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// Connects the store, reconciles the signers, and starts the engine and the API (must be
/// called inside a Tokio runtime).
pub async fn start(config: Config) -> Result<Relayer, StartError> {
    if config.signers.is_empty() {
        return Err(StartError::NoSigner);
    }
    let store = Store::connect(&config.db).await?;
    let client = Arc::new(Client::new(config.rpc.clone()));
    let engine = Engine::new(store.clone(), client.clone(), config.signers, config.engine).await?;
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| StartError::Listen {
            addr: config.listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| StartError::Listen {
        addr: config.listen,
        source,
    })?;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let until_stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };
    let engine_task = tokio::spawn({
        let stopped = until_stopped(stopped.clone());
        async move { engine.run(stopped).await }
    });
    let app = api::router(api::AppState { store, client });
    let api_task = tokio::spawn({
        let stopped = until_stopped(stopped);
        async move {
            if let Err(e) = axum::serve(listener, app)
                .with_graceful_shutdown(stopped)
                .await
            {
                tracing::error!(error = %e, "API server failed");
            }
        }
    });
    tracing::info!(%addr, "relayer listening");
    Ok(Relayer {
        addr,
        stop,
        tasks: vec![engine_task, api_task],
    })
}
