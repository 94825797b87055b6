//! # Bursar relayer
//!
//! The HTTP API sandbox hosts and agents use to open sessions and pay without holding keys or
//! ETH, on a transaction engine that never loses or duplicates a transaction.
//!
//! * [`api`] — the HTTP handlers (thin: extract, call one domain function, answer).
//! * [`hosts`] — hosts' API keys, scopes and authentication.
//! * [`sessions`] — preparing, opening, registering, revoking and closing sessions; capability
//!   tokens; lease heartbeats.
//! * [`payments`] — sandboxes' payments: checked by the contracts' rules, signed, queued.
//! * [`provenance`] — sandboxes' provenance records.
//! * [`providers`] — sandbox providers' lifecycle webhooks, verified and read.
//! * [`lifecycle`] — sandboxes' lifecycle events driving their sessions (pause, resume,
//!   terminate → revoke and close).
//! * [`metering`] — sandboxes' reported usage paid from their sessions at the host's rates.
//! * [`outcomes`] — what mined transactions did (receipt ids, pending ids, decoded reverts).
//! * [`webhooks`] — outbound webhooks to hosts (Standard Webhooks), retried, dead-lettered.
//! * [`egress`] — where requests a host asked for may go (public addresses only).
//! * [`submission`] — the transaction engine: nonces, persistence before broadcast,
//!   resubmission, replacement, confirmation.
//! * [`vault`] — custodial session keys, sealed under the master key.
//! * [`store`] — the only place with SQL (SQLite or PostgreSQL).
//! * [`error`] — the API's one error type and its JSON.
//! * [`wire`] — amounts, hashes and ids in the API's JSON.
//! * [`x402`] — agents paying HTTP 402 APIs from their sessions; the relayer as facilitator.
//! * [`metrics`] — Prometheus text.

pub mod api;
pub mod egress;
pub mod error;
pub mod hosts;
pub mod lifecycle;
pub mod metering;
pub mod metrics;
pub mod outcomes;
pub mod payments;
pub mod provenance;
pub mod providers;
pub mod sessions;
pub mod store;
pub mod submission;
pub mod vault;
pub mod webhooks;
pub mod wire;
pub mod x402;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use alloy_primitives::Address;
use bursar_client::{Client, Key};

use crate::store::{Store, StoreError};
use crate::submission::{Engine, EngineConfig, EngineError};
use crate::vault::MasterKey;

/// `N` bytes from the operating system's CSPRNG (keys, ids, nonces).
pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut bytes);
    bytes
}

/// A nonce for simulating a signed message before its real nonce is taken: random, with the
/// top bit set, which the consecutive nonces the relayer hands out never have.
pub(crate) fn probe_nonce() -> alloy_primitives::U256 {
    let one = alloy_primitives::U256::from(1);
    (alloy_primitives::U256::from_be_bytes(random_bytes::<32>()) >> 1) | (one << 255)
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
    /// The deployed contracts.
    pub contracts: Contracts,
    /// Seals custodial session keys at rest.
    pub master_key: MasterKey,
    /// Timeouts and lifetimes.
    pub settings: Settings,
}

/// The deployed Bursar contracts the relayer drives (from a deployment record).
#[derive(Clone, Copy, Debug)]
pub struct Contracts {
    /// The SessionWallet.
    pub wallet: Address,
    /// The SessionGateway (gasless opens and decisions).
    pub gateway: Address,
    /// The ReceiptRegistry (provenance).
    pub receipts: Address,
}

/// Timeouts and lifetimes, with safe defaults.
#[derive(Clone, Debug)]
pub struct Settings {
    /// How long `POST /v1/sessions` waits for the open to be mined before answering `opening`.
    pub open_wait: Duration,
    /// How long a signed payment intent or provenance record stays valid (its `deadline`).
    pub intent_ttl: Duration,
    /// How long an owner's `OpenSession` signature stays valid after `prepare`.
    pub prepare_ttl: Duration,
    /// Failed webhook attempts before a delivery is dead-lettered.
    pub webhook_attempts: u32,
    /// The wait after a failed webhook attempt, doubled with each further failure (at most
    /// an hour).
    pub webhook_backoff: Duration,
    /// Requests per second per host or session (bursts of twice that); `None`: no limit.
    pub rate_limit: Option<f64>,
    /// Requests per second per client address without credentials (provider webhooks, the
    /// x402 facilitator, health); `None`: no limit. Behind a proxy every client shares the
    /// proxy's address: raise it there.
    pub client_rate_limit: Option<f64>,
    /// Failed authentications per second per client address; over it, further credentials
    /// from the address are refused without being looked up. `None`: no limit.
    pub auth_failure_limit: Option<f64>,
    /// A relayer process that has not beaten for this long is taken for dead: a retry takes
    /// over the idempotency keys of its unanswered requests. It beats four times as often.
    pub instance_timeout: Duration,
    /// How often providers without webhooks (Runloop, Browserbase) are polled.
    pub poll_interval: Duration,
    /// Runloop's API.
    pub runloop_url: String,
    /// Browserbase's API.
    pub browserbase_url: String,
    /// Where hosts' webhook endpoints may point (public addresses; loopback only when allowed,
    /// for a devnet and the tests).
    pub webhook_egress: egress::Policy,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            open_wait: Duration::from_secs(30),
            intent_ttl: Duration::from_secs(600),
            prepare_ttl: Duration::from_secs(3_600),
            webhook_attempts: 8,
            webhook_backoff: Duration::from_secs(5),
            rate_limit: Some(1_000.0),
            client_rate_limit: Some(200.0),
            auth_failure_limit: Some(5.0),
            instance_timeout: Duration::from_secs(10),
            poll_interval: Duration::from_secs(15),
            runloop_url: providers::runloop::DEFAULT_URL.into(),
            browserbase_url: providers::browserbase::DEFAULT_URL.into(),
            webhook_egress: egress::Policy::default(),
        }
    }
}

/// What the API handlers and the background tasks share.
pub struct Core {
    /// The database.
    pub store: Store,
    /// The node.
    pub client: Arc<Client>,
    /// The transaction engine.
    pub engine: Arc<Engine>,
    /// The chain's id.
    pub chain_id: u64,
    /// The contracts.
    pub contracts: Contracts,
    /// The master key.
    pub(crate) master_key: MasterKey,
    /// Timeouts and lifetimes.
    pub settings: Settings,
    /// Bumped after each pass of [`outcomes`] that settled something, of [`webhooks`] that
    /// attempted a delivery, after each lifecycle event recorded and each session wound down:
    /// what [`Core::wait_for`] looks again after.
    pub(crate) settled: tokio::sync::watch::Sender<u64>,
    /// Payments allowed by the contracts' rules, on their way to be checked against their
    /// sessions' queued payments and stored, a batch at a time.
    pub(crate) payments: payments::Queue,
    /// Requests per credential.
    pub(crate) limiter: api::Limiter,
    /// This process's id among the relayer processes sharing the database.
    pub(crate) instance: String,
    /// Wakes the webhook deliverer (a new message, a replay).
    pub(crate) webhooks_due: tokio::sync::Notify,
    /// Wakes [`lifecycle::run`] (a session to wind down).
    pub(crate) lifecycle_due: tokio::sync::Notify,
    /// Lifecycle deliveries received, for the metrics.
    pub(crate) deliveries: metrics::Deliveries,
    /// Held while [`metering::charge`] runs: one charge at a time.
    pub(crate) metering: tokio::sync::Mutex<()>,
    /// Custodial keys opened so far, by address.
    pub(crate) open_keys: std::sync::Mutex<std::collections::HashMap<String, Key>>,
    /// Gas limits measured per session on its first payment (later ones cost no more).
    pub(crate) pay_gas: std::sync::Mutex<std::collections::HashMap<String, u64>>,
}

impl Core {
    /// Runs `look` until it finds something or `wait` passes (then the last look's answer is
    /// `None`), looking again after each engine pass and each settling of outcomes — not on a
    /// timer.
    pub async fn wait_for<T, F, Fut>(
        &self,
        wait: Duration,
        mut look: F,
    ) -> Result<Option<T>, error::ApiError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<Option<T>, error::ApiError>>,
    {
        let mut settled = self.settled.subscribe();
        let mut engine = self.engine.changes();
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(found) = look().await? {
                return Ok(Some(found));
            }
            let changed = async {
                tokio::select! {
                    r = settled.changed() => r.is_ok(),
                    r = engine.changed() => r.is_ok(),
                }
            };
            match tokio::time::timeout_at(deadline, changed).await {
                Ok(true) => continue,
                _ => return Ok(None),
            }
        }
    }

    /// Unix seconds now by the later of the chain's clock and ours: what deadlines are counted
    /// from (a dev chain's clock runs ahead of the wall clock, and tests move it). `fresh`
    /// reads the latest block; otherwise the engine's reading of it (at most a second old)
    /// serves, for the hot path of payments.
    pub async fn now(&self, fresh: bool) -> Result<u64, error::ApiError> {
        let chain = if fresh {
            self.client.latest_block().await?.timestamp.to()
        } else {
            self.engine.chain_time().await?
        };
        Ok(chain.max((store::now_ms() / 1000) as u64))
    }

    /// The custodial session key with this address, opened (and kept open in memory: a busy
    /// session signs many intents; the sealed copy stays the only one at rest).
    pub(crate) async fn session_key(&self, address: &str) -> Result<Key, vault::VaultError> {
        if let Some(key) = self
            .open_keys
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(address)
        {
            return Ok(key.clone());
        }
        let key = vault::session_key(&self.store, &self.master_key, address).await?;
        let mut keys = self.open_keys.lock().unwrap_or_else(|e| e.into_inner());
        if keys.len() >= 10_000 {
            keys.clear();
        }
        keys.insert(address.to_owned(), key.clone());
        Ok(key)
    }

    /// Queues `call` with the engine inside a new database transaction, which the caller
    /// completes with what it stores alongside (given the transaction's id) and then hands to
    /// [`Core::commit`]: both land or neither does.
    pub(crate) async fn queue(
        &self,
        call: &submission::Call,
    ) -> Result<(store::DbTx, i64), error::ApiError> {
        let fees = self.engine.fees().await?;
        let mut db = self.store.begin().await?;
        let id = self.engine.submit_in(&mut db, call, fees).await?;
        Ok((db, id))
    }

    /// Commits what [`Core::queue`] began and wakes the engine.
    pub(crate) async fn commit(&self, db: store::DbTx) -> Result<(), error::ApiError> {
        db.commit().await.map_err(StoreError::from)?;
        self.engine.wake();
        Ok(())
    }

    /// The gas `data` to `to` from `from` needs now, with a quarter on top; a revert is the
    /// contracts' refusal (the call is checked by their own rules before anything is sent).
    pub(crate) async fn gas_for(
        &self,
        from: Address,
        to: Address,
        data: &[u8],
    ) -> Result<u64, error::ApiError> {
        let gas = self
            .client
            .estimate_gas(from, Some(to), data, alloy_primitives::U256::ZERO)
            .await?;
        Ok(gas + gas / 4)
    }
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
    /// What the API and the background tasks share (for embedding and tests).
    pub core: Arc<Core>,
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
    let (payment_queue, queued_payments) = payments::Queue::new();
    let core = Arc::new(Core {
        store,
        client,
        engine: engine.clone(),
        chain_id,
        contracts: config.contracts,
        master_key: config.master_key,
        settings: config.settings,
        settled: tokio::sync::watch::channel(0).0,
        payments: payment_queue,
        webhooks_due: Default::default(),
        lifecycle_due: Default::default(),
        deliveries: Default::default(),
        metering: Default::default(),
        limiter: Default::default(),
        instance: format!(
            "inst_{}",
            alloy_primitives::hex::encode(random_bytes::<8>())
        ),
        pay_gas: Default::default(),
        open_keys: Default::default(),
    });
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let until_stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };
    let engine_task = tokio::spawn({
        let stopped = until_stopped(stopped.clone());
        async move { engine.run(stopped).await }
    });
    let outcomes_task = tokio::spawn({
        let stopped = until_stopped(stopped.clone());
        let core = core.clone();
        async move { outcomes::run(&core, stopped).await }
    });
    core.store
        .heartbeat_instance(&core.instance, store::now_ms())
        .await?;
    let heartbeat_task = tokio::spawn({
        let mut stopped = stopped.clone();
        let core = core.clone();
        async move {
            let every = core.settings.instance_timeout / 4;
            loop {
                tokio::select! {
                    _ = stopped.wait_for(|stop| *stop) => return,
                    _ = tokio::time::sleep(every) => {}
                }
                if let Err(e) = core
                    .store
                    .heartbeat_instance(&core.instance, store::now_ms())
                    .await
                {
                    tracing::warn!(error = %e, "instance heartbeat failed");
                }
            }
        }
    });
    let payments_task = tokio::spawn({
        let stopped = until_stopped(stopped.clone());
        let core = core.clone();
        async move { payments::run_queue(&core, queued_payments, stopped).await }
    });
    let webhooks_task = tokio::spawn({
        let stopped = until_stopped(stopped.clone());
        let core = core.clone();
        async move { webhooks::run(&core, stopped).await }
    });
    let lifecycle_task = tokio::spawn({
        let stopped = until_stopped(stopped.clone());
        let core = core.clone();
        async move { lifecycle::run(&core, stopped).await }
    });
    let poller_task = tokio::spawn({
        let stopped = until_stopped(stopped.clone());
        let core = core.clone();
        async move { providers::poller::run(&core, stopped).await }
    });
    let app = api::router(core.clone());
    let api_task = tokio::spawn({
        let stopped = until_stopped(stopped);
        async move {
            // The peer's address: anonymous callers and failed authentications are limited by it.
            let app = app.into_make_service_with_connect_info::<SocketAddr>();
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
        core,
        stop,
        tasks: vec![
            engine_task,
            outcomes_task,
            payments_task,
            webhooks_task,
            lifecycle_task,
            poller_task,
            heartbeat_task,
            api_task,
        ],
    })
}
