//! # Bursar indexer
//!
//! Follows the chain, stores every event of the Bursar contracts in SQL (a SQLite file by
//! default, PostgreSQL at scale), survives reorgs and crashes, and serves audit queries.
//!
//! * [`follower`] — backfill in adaptive ranges, then block by block with reorg detection.
//! * [`logs`] — the logs followed, as rows: what the follower and audit verification share.
//! * [`decode`] — events decoded through the bindings.
//! * [`projections`] — sessions' state by the wallet's rules, folded from their events.
//! * [`spend`] — payments summed by session, owner, counterparty, token and time bucket.
//! * [`records`] — receipts and provenance records, with acknowledgements, revocations and
//!   lineage.
//! * [`store`] — the only place with SQL.
//! * [`api`] — the HTTP API.
//! * [`audit`] — signed, hash-chained audit exports and their verification against the chain.
//! * [`metrics`] — Prometheus metrics.

pub mod agents;
pub mod api;
pub mod audit;
pub mod contracts;
pub mod decode;
pub mod explorer;
pub mod follower;
pub mod logs;
pub mod metrics;
pub mod projections;
pub mod records;
pub mod spend;
pub mod store;

use std::net::SocketAddr;

use bursar_client::Client;

pub use contracts::{followed, Contracts, AGENT_REGISTRIES, CONTRACTS};
pub use follower::FollowConfig;
use store::{Store, StoreError};

/// What an indexer runs with.
pub struct Config {
    /// The chain's JSON-RPC endpoint.
    pub rpc: String,
    /// `sqlite://FILE` or `postgres://…`.
    pub db: String,
    /// Where the API listens (port 0: any free port).
    pub listen: SocketAddr,
    /// The contracts to follow.
    pub contracts: Contracts,
    /// How to follow.
    pub follow: FollowConfig,
    /// The key audit exports are signed with (see [`audit::sign`]; kept from run to run, so
    /// auditors can pin its address).
    pub signing_key: bursar_client::Key,
}

/// Why the indexer did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The database.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The node (it must answer at start: a wrong URL is reported at once, not retried).
    #[error(transparent)]
    Rpc(#[from] bursar_client::rpc::RpcError),
    /// The listening socket.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

/// A running indexer: its follower and its API.
pub struct Indexer {
    /// The address the API listens on.
    pub addr: SocketAddr,
    /// Its database.
    pub store: Store,
    progress: tokio::sync::watch::Receiver<Option<(u64, String)>>,
    metrics: std::sync::Arc<metrics::Metrics>,
    stop: tokio::sync::watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Indexer {
    /// Waits until the block with `hash` is the last one ingested, or `timeout` passes
    /// (answers whether it got there).
    pub async fn synced_to(&self, hash: &str, timeout: std::time::Duration) -> bool {
        let mut progress = self.progress.clone();
        let reached = async {
            progress
                .wait_for(|p| p.as_ref().is_some_and(|(_, h)| h == hash))
                .await
                .is_ok()
        };
        tokio::time::timeout(timeout, reached)
            .await
            .unwrap_or(false)
    }

    /// What the follower counts (the node's head, the last block indexed, events, …).
    pub fn metrics(&self) -> std::sync::Arc<metrics::Metrics> {
        self.metrics.clone()
    }

    /// Stops following and serving, and waits for both.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// Connects the store and the node, and starts following and serving (inside a Tokio
/// runtime).
pub async fn start(config: Config) -> Result<Indexer, StartError> {
    let store = Store::connect(&config.db).await?;
    let client = Client::new(config.rpc.clone());
    let chain_id = client.chain_id().await?;
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
    let client = std::sync::Arc::new(client);
    let exporter = audit::Exporter::new(
        config.signing_key,
        &config.contracts,
        config.follow.start_block,
    );
    let signer = exporter.signer();
    let follower = follower::Follower::new(
        Client::new(config.rpc.clone()),
        store.clone(),
        chain_id,
        config.contracts,
        config.follow,
    );
    let progress = follower.progress();
    let metrics = follower.metrics();
    let follow_task = tokio::spawn(follower.run(until_stopped(stopped.clone())));
    let state = api::AppState {
        store: store.clone(),
        client,
        chain_id,
        metrics: metrics.clone(),
        exporter: std::sync::Arc::new(exporter),
    };
    let api_task = tokio::spawn(api::serve(listener, state, until_stopped(stopped)));
    tracing::info!(%addr, chain_id, export_signer = %signer, "indexer listening");
    Ok(Indexer {
        addr,
        store,
        progress,
        metrics,
        stop,
        tasks: vec![follow_task, api_task],
    })
}
