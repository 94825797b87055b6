//! What the API handlers and the background jobs share: the store, the node, the engine, the
//! configuration, and the few things held in memory.

use std::sync::Arc;
use std::time::Duration;

use alloy_primitives::Address;
use bursar_client::{Client, Key};

use super::config::{Contracts, Settings};
use super::{inbox, Error};
use crate::engine::metrics;
use crate::engine::submission::{self, Engine};
use crate::engine::vault::{self, MasterKey};
use crate::store::{self, Store, StoreError};

/// How often a request waiting on a transaction's outcome (a payment's, a session's opening,
/// an x402 reservation's) looks again without news of it: the engine and settlement of another
/// relayer process sharing the database may be the ones moving it.
pub(crate) const RECHECK: Duration = Duration::from_millis(500);

/// What the API handlers and the background tasks share: the services every request uses
/// (the database, the node, the engine and its supervised tasks), what the relayer was
/// configured with, and three groups by role — the keys it keeps, the news it passes between
/// tasks, and what this process holds in memory.
pub struct App {
    /// The database.
    pub store: Store,
    /// The node.
    pub client: Arc<Client>,
    /// The transaction engine.
    pub engine: Arc<Engine>,
    /// The supervised tasks (the engine, the jobs) and how each is doing.
    pub tasks: Arc<crate::engine::tasks::Tasks>,
    /// The chain's id.
    pub chain_id: u64,
    /// The contracts.
    pub contracts: Contracts,
    /// Timeouts and lifetimes.
    pub settings: Settings,
    /// The custodial keys.
    pub(crate) custody: Custody,
    /// News from one task to those waiting on it.
    pub(crate) wakes: Wakes,
    /// What this process holds in memory (another process sharing the database has its own).
    pub(crate) process: Process,
}

/// The custodial keys: sealed at rest, opened on demand.
pub(crate) struct Custody {
    /// The master key the session keys are sealed under.
    pub(crate) master_key: MasterKey,
    /// Custodial keys opened so far, by address.
    pub(crate) open_keys: std::sync::Mutex<std::collections::HashMap<Address, Key>>,
    /// The relayer's own keys opened so far, by purpose.
    pub(crate) own_keys: std::sync::Mutex<std::collections::HashMap<&'static str, Key>>,
}

impl Custody {
    /// Custody under `master_key`, nothing opened yet.
    pub(crate) fn new(master_key: MasterKey) -> Self {
        Custody {
            master_key,
            open_keys: Default::default(),
            own_keys: Default::default(),
        }
    }
}

/// News one task gives those waiting on it.
pub(crate) struct Wakes {
    /// Bumped after each pass of the settlement that settled something, of webhooks that
    /// attempted a delivery, after each lifecycle event recorded and each session wound down:
    /// what [`App::wait_for`] looks again after.
    pub(crate) settled: tokio::sync::watch::Sender<u64>,
    /// The ids of the payments each pass of the settlement recorded an outcome for: what a
    /// request waiting on one payment listens to (with [`Engine::touched`]).
    pub(crate) settled_payments: tokio::sync::broadcast::Sender<Arc<[String]>>,
    /// Wakes the webhook deliverer (a new message, a replay).
    pub(crate) webhooks_due: tokio::sync::Notify,
    /// Wakes the wind-down job (a session to wind down).
    pub(crate) lifecycle_due: tokio::sync::Notify,
}

impl Wakes {
    /// Nothing announced yet.
    pub(crate) fn new() -> Self {
        Wakes {
            settled: tokio::sync::watch::channel(0).0,
            settled_payments: tokio::sync::broadcast::channel(submission::TOUCHED_PASSES).0,
            webhooks_due: Default::default(),
            lifecycle_due: Default::default(),
        }
    }
}

/// What one relayer process holds in memory.
pub(crate) struct Process {
    /// This process's id among the relayer processes sharing the database.
    pub(crate) instance: String,
    /// Payments allowed by the contracts' rules, on their way to be checked against their
    /// sessions' queued payments and stored, a batch at a time.
    pub(crate) payments: inbox::Queue,
    /// Held while metering charges a session: one charge at a time.
    pub(crate) metering: tokio::sync::Mutex<()>,
    /// Gas limits measured per session on its first payment (later ones cost no more).
    pub(crate) pay_gas: std::sync::Mutex<std::collections::HashMap<String, u64>>,
    /// Lifecycle deliveries received, for the metrics.
    pub(crate) deliveries: metrics::Deliveries,
}

impl App {
    /// Where people reach this relayer, without a trailing `/` (set at start:
    /// [`crate::Settings::public_url`], or the address it listens on).
    pub fn public_url(&self) -> &str {
        self.settings
            .public_url
            .as_deref()
            .unwrap_or("")
            .trim_end_matches('/')
    }

    /// Runs `look` until it finds something or `wait` passes (then the last look's answer is
    /// `None`), looking again after each engine pass and each settling of outcomes, and every
    /// [`RECHECK`] without them (another process may be sending).
    pub async fn wait_for<T, F, Fut>(&self, wait: Duration, mut look: F) -> Result<Option<T>, Error>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<Option<T>, Error>>,
    {
        let mut settled = self.wakes.settled.subscribe();
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
                    () = tokio::time::sleep(RECHECK) => true,
                }
            };
            match tokio::time::timeout_at(deadline, changed).await {
                Ok(true) => continue,
                _ => return Ok(None),
            }
        }
    }

    /// Payment `payment` as `look` reads it, once `done` holds for it, or when `wait` passes
    /// (then read once more). Between looks it waits for news: the engine touched the
    /// payment's transaction, or the settlement recorded the payment (or news were missed,
    /// having fallen behind), and every [`RECHECK`] regardless. Many requests wait on
    /// payments at once; each reading its payment again after every engine pass made hundreds
    /// of reads per pass. It listens before its first look, so no news falls in between.
    pub(crate) async fn wait_for_payment<F, Fut>(
        &self,
        wait: Duration,
        payment: &str,
        mut look: F,
        done: impl Fn(&store::PaymentRow) -> bool,
    ) -> Result<store::PaymentRow, Error>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<store::PaymentRow, Error>>,
    {
        use tokio::sync::broadcast::error::RecvError;
        let mut settled = self.wakes.settled_payments.subscribe();
        let mut touched = self.engine.touched();
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let row = look().await?;
            if done(&row) || wait.is_zero() {
                return Ok(row);
            }
            let transaction = row.transaction_id;
            // `true`: news of this payment (or news missed); `false`: the relayer is stopping.
            let news = async {
                // Another relayer process may carry the payment: its news never reach this one.
                let recheck = tokio::time::sleep(RECHECK);
                tokio::pin!(recheck);
                loop {
                    tokio::select! {
                        r = settled.recv() => match r {
                            Ok(ids) if !ids.iter().any(|id| id == payment) => {}
                            Err(RecvError::Closed) => return false,
                            _ => return true,
                        },
                        r = touched.recv() => match r {
                            Ok(ids) if !ids.contains(&transaction) => {}
                            Err(RecvError::Closed) => return false,
                            _ => return true,
                        },
                        () = &mut recheck => return true,
                    }
                }
            };
            match tokio::time::timeout_at(deadline, news).await {
                Ok(true) => continue,
                _ => return look().await,
            }
        }
    }

    /// Unix seconds now by the later of the chain's clock and ours: what deadlines are counted
    /// from (a dev chain's clock runs ahead of the wall clock, and tests move it). `fresh`
    /// reads the latest block; otherwise the engine's reading of it (at most a second old)
    /// serves, for the hot path of payments.
    pub async fn now(&self, fresh: bool) -> Result<u64, Error> {
        let chain = if fresh {
            self.client.latest_block().await?.timestamp.to()
        } else {
            self.engine.chain_time().await?
        };
        Ok(chain.max((store::now_ms() / 1000) as u64))
    }

    /// The custodial session key with this address, opened (and kept open in memory: a busy
    /// session signs many intents; the sealed copy stays the only one at rest).
    pub(crate) async fn session_key(&self, address: Address) -> Result<Key, vault::VaultError> {
        if let Some(key) = self
            .custody
            .open_keys
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&address)
        {
            return Ok(key.clone());
        }
        // Sealed under its lowercase hex, as `vault::new_sealed_key` stored it.
        let stored = format!("{address:#x}");
        let key = vault::session_key(&self.store, &self.custody.master_key, &stored).await?;
        let mut keys = self
            .custody
            .open_keys
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if keys.len() >= 10_000 {
            keys.clear();
        }
        keys.insert(address, key.clone());
        Ok(key)
    }

    /// The relayer's own key for `purpose` (made the first time; the same in every process
    /// sharing the database), opened and kept open.
    pub(crate) async fn relayer_key(
        &self,
        purpose: &'static str,
    ) -> Result<Key, vault::VaultError> {
        let own = |c: &Custody| {
            c.own_keys
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(purpose)
                .cloned()
        };
        if let Some(key) = own(&self.custody) {
            return Ok(key);
        }
        let key = vault::relayer_key(&self.store, &self.custody.master_key, purpose).await?;
        self.custody
            .own_keys
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(purpose, key.clone());
        Ok(key)
    }

    /// Queues `call` with the engine inside a new database transaction, which the caller
    /// completes with what it stores alongside (given the transaction's id) and then hands to
    /// [`App::commit`]: both land or neither does.
    pub(crate) async fn queue(&self, call: &submission::Call) -> Result<(store::DbTx, i64), Error> {
        let fees = self.engine.fees().await?;
        let mut db = self.store.begin().await?;
        let id = self.engine.submit_in(&mut db, call, fees).await?;
        Ok((db, id))
    }

    /// Commits what [`App::queue`] began and wakes the engine.
    pub(crate) async fn commit(&self, db: store::DbTx) -> Result<(), Error> {
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
    ) -> Result<u64, Error> {
        let gas = self
            .client
            .estimate_gas(from, Some(to), data, alloy_primitives::U256::ZERO)
            .await?;
        Ok(gas + gas / 4)
    }
}
