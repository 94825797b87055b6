//! # Bursar relayer
//!
//! The HTTP API sandbox hosts and agents use to open sessions and pay without holding keys or
//! ETH, on a transaction engine that never loses or duplicates a transaction. Its floors, each
//! importing only the ones below it (the table is in `docs/ARCHITECTURE.md`):
//!
//! 1. this file: [`start`] builds the [`App`], spawns the [`jobs`] and serves the [`api`];
//! 2. [`api`] (the only module that names axum) and [`jobs`] (the background loops);
//! 3. the features: [`x402`], [`lifecycle`], [`providers`], [`metering`], [`settlement`],
//!    [`provenance`], [`payments`], [`sessions`], [`allowlists`], [`limits`], [`approval`],
//!    [`webhooks`], [`hosts`];
//! 4. the [`kernel`]: the shared state, configuration, error, session terms, host policy,
//!    signatures and JSON forms;
//! 5. the [`engine`]: the transaction engine, task supervision, the vault, metrics and
//!    randomness;
//! 6. [`store`], the only place with SQL.
//!
//! Its manual is the crate's README.

pub mod agents;
pub mod allowlists;
pub mod api;
pub mod approval;
pub mod engine;
pub mod feedback;
pub mod hosts;
pub mod jobs;
pub mod kernel;
pub mod lifecycle;
pub mod limits;
pub mod metering;
pub mod payments;
pub mod provenance;
pub mod providers;
pub mod sessions;
pub mod settlement;
pub mod store;
pub mod webhooks;
pub mod x402;

pub use kernel::signing;
pub use kernel::{App, Config, Contracts, Error, Settings};

use std::net::SocketAddr;
use std::sync::Arc;

use bursar_client::Client;

use crate::engine::random::random_bytes;
use crate::engine::submission::{Engine, EngineError};
use crate::engine::tasks;
use crate::kernel::app::{Custody, Process, Wakes};
use crate::kernel::inbox;
use crate::store::{Store, StoreError};

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
    /// What the API and the background tasks share (for embedding and tests).
    pub app: Arc<App>,
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

/// Connects the store, reconciles the signers, and starts the engine, the jobs and the API
/// (must be called inside a Tokio runtime).
pub async fn start(config: Config) -> Result<Relayer, StartError> {
    if config.signers.is_empty() {
        return Err(StartError::NoSigner);
    }
    let store = Store::connect(&config.db).await?;
    let client = Arc::new(Client::new(config.rpc.clone()));
    let chain_id = client.chain_id().await.map_err(EngineError::from)?;
    let engine =
        Arc::new(Engine::new(store.clone(), client.clone(), config.signers, config.engine).await?);
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
    let mut settings = config.settings;
    settings
        .public_url
        .get_or_insert_with(|| format!("http://{}", api::reachable(addr)));
    let (payments, queued_payments) = inbox::Queue::new();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let app = Arc::new(App {
        tasks: tasks::Tasks::new(stopped),
        store,
        client,
        engine: engine.clone(),
        chain_id,
        contracts: config.contracts,
        settings,
        custody: Custody::new(config.master_key),
        wakes: Wakes::new(),
        process: Process {
            instance: format!(
                "inst_{}",
                alloy_primitives::hex::encode(random_bytes::<8>())
            ),
            payments,
            metering: Default::default(),
            pay_gas: Default::default(),
            deliveries: Default::default(),
        },
    });
    app.store
        .heartbeat_instance(&app.process.instance, store::now_ms())
        .await?;
    // Every loop runs supervised: one that ends or panics before the stop is noticed,
    // reported by `/health` and started again (see `tasks`).
    let tasks = &app.tasks;
    let mut handles = vec![tasks.spawn("engine", {
        let engine = engine.clone();
        move |stop| {
            let engine = engine.clone();
            async move { engine.run(stop).await }
        }
    })];
    macro_rules! job {
        ($name:literal, $run:path) => {{
            let app = app.clone();
            handles.push(tasks.spawn($name, move |stop| {
                let app = app.clone();
                async move { $run(&app, stop).await }
            }));
        }};
    }
    job!("settle", jobs::settle::run);
    job!("deliver_webhooks", jobs::deliver_webhooks::run);
    job!("wind_down", jobs::wind_down::run);
    job!("poll_providers", jobs::poll_providers::run);
    job!("heartbeat", jobs::heartbeat::run);
    job!("x402_channels", jobs::x402_channels::run);
    // The inbox outlives a failed run of its job: the next run takes what arrived meanwhile.
    let inbox = Arc::new(tokio::sync::Mutex::new(queued_payments));
    handles.push(tasks.spawn("queue_payments", {
        let app = app.clone();
        move |stop| {
            let (app, inbox) = (app.clone(), inbox.clone());
            async move { jobs::queue_payments::run(&app, &mut *inbox.lock().await, stop).await }
        }
    }));
    handles.push(tokio::spawn(api::serve(
        listener,
        app.clone(),
        tasks.stop_signal(),
    )));
    tracing::info!(%addr, "relayer listening");
    Ok(Relayer {
        addr,
        app,
        stop,
        tasks: handles,
    })
}
