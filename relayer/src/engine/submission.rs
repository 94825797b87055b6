//! The transaction engine: transactions that are never lost and never sent twice.
//!
//! * A nonce is allocated and the transaction signed and stored in one database transaction,
//!   before anything is broadcast ([`Engine::submit`]); a crash at any point leaves either
//!   nothing or the signed bytes, which the next [`Engine::tick`] sends.
//! * Per signer, transactions go out in nonce order; the same bytes are sent again while the
//!   node does not know them (a dropped transaction comes back), and a transaction pending for
//!   longer than [`EngineConfig::stuck_after`] is replaced with higher fees
//!   ([`bursar_client::Fees::replacement`]). Every attempt is stored before it is sent.
//! * A missing receipt is "unknown", never "failed": a transaction fails only when the chain's
//!   nonce for its signer has passed it and none of its attempts has a receipt (another
//!   transaction from the same key took the nonce).
//! * Mined transactions are re-read until [`EngineConfig::confirmations`] blocks are on top; a
//!   receipt that disappears (a reorg) sends the transaction back to `submitted`.
//! * Each row carries its own `next_check_at`: the engine looks only at rows that are due.
//! * At start every signer is reconciled with the chain: a key that sent transactions
//!   elsewhere has its next nonce moved up to the chain's.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use alloy_consensus::TxEip1559;
use alloy_primitives::{Address, Bytes, TxKind, B256, U256};
use bursar_client::rpc::RpcError;
use bursar_client::{Client, Fees, Key};
use serde_json::json;

use crate::store::{now_ms, DbTx, NewAttempt, NewTransaction, Store, StoreError, TxRow, TxStatus};

/// How soon a transaction just sent is first looked at (unless the poll interval is shorter):
/// a devnet or a fast chain has its receipt by then, and one more `eth_getTransactionReceipt`
/// per transaction costs little elsewhere. Then every poll interval.
pub const FIRST_LOOK: Duration = Duration::from_millis(50);

/// Passes of [`Engine::touched`] kept for a receiver that has not read them yet.
pub const TOUCHED_PASSES: usize = 256;

/// How the engine paces itself.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Blocks on top of a transaction's block before it is `confirmed` (0: at once).
    pub confirmations: u64,
    /// How soon a sent transaction is looked at again.
    pub poll: Duration,
    /// How long a transaction may stay unmined before it is replaced with higher fees.
    pub stuck_after: Duration,
    /// The longest wait before retrying after RPC errors (the wait doubles from `poll` with
    /// each error in a row).
    pub max_backoff: Duration,
    /// Whether this process sends transactions. An API-only process (`false`) stores them for
    /// another process on the same PostgreSQL database to send.
    pub send: bool,
    /// This process's name among those sharing the database: one process at a time sends for
    /// a signer, holding it for `signer_lease` and renewing that as it runs.
    pub owner: String,
    /// How long a process holds its signers without renewing them (it renews every tick).
    pub signer_lease: Duration,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            confirmations: 1,
            poll: Duration::from_millis(500),
            stuck_after: Duration::from_secs(30),
            max_backoff: Duration::from_secs(30),
            send: true,
            owner: format!(
                "engine_{}",
                alloy_primitives::hex::encode(crate::engine::random::random_bytes::<8>())
            ),
            signer_lease: Duration::from_secs(15),
        }
    }
}

/// Why the engine could not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The node failed (before anything was stored).
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// No signer with this address.
    #[error("no relayer signer {0}")]
    UnknownSigner(Address),
}

/// The transaction engine over a store, a node and the relayer's signers.
pub struct Engine {
    store: Store,
    client: Arc<Client>,
    signers: HashMap<Address, Key>,
    chain_id: u64,
    config: EngineConfig,
    /// RPC errors in a row per transaction, for the backoff (kept in memory: a restart retries
    /// at once).
    errors: std::sync::Mutex<HashMap<i64, u32>>,
    /// When the latest block was last read, the fee caps it gives and its timestamp.
    head: std::sync::Mutex<Option<(std::time::Instant, Fees, u64)>>,
    /// Wakes the run loop before its poll interval (a new transaction).
    wake: tokio::sync::Notify,
    /// When (unix ms) a transaction sent since is first due to be looked at, if sooner than
    /// the poll interval ([`FIRST_LOOK`]); `i64::MAX` when none is.
    soonest: std::sync::atomic::AtomicI64,
    /// Bumped after each pass that looked at transactions.
    changes: tokio::sync::watch::Sender<u64>,
    /// The ids of the transactions each pass looked at (see [`Engine::touched`]).
    touched: tokio::sync::broadcast::Sender<Arc<[i64]>>,
    /// Latencies and errors, for `/metrics`.
    metrics: crate::engine::metrics::EngineMetrics,
}

/// A call for the engine to send.
#[derive(Clone, Debug)]
pub struct Call {
    /// The relayer signer that sends it.
    pub signer: Address,
    /// The contract called.
    pub to: Address,
    /// The calldata.
    pub data: Bytes,
    /// Wei sent with it.
    pub value: U256,
    /// Its gas limit.
    pub gas_limit: u64,
}

impl Engine {
    /// An engine for `signers`, each reconciled with the chain's nonce for it.
    pub async fn new(
        store: Store,
        client: Arc<Client>,
        signers: Vec<Key>,
        config: EngineConfig,
    ) -> Result<Self, EngineError> {
        let chain_id = client.chain_id().await?;
        for key in &signers {
            let chain_nonce = client.nonce(key.address()).await?;
            let next = store
                .reconcile_signer(&hex_address(key.address()), chain_nonce as i64)
                .await?;
            tracing::info!(signer = %key.address(), chain_nonce, next_nonce = next, "signer reconciled");
        }
        Ok(Engine {
            store,
            client,
            signers: signers.into_iter().map(|k| (k.address(), k)).collect(),
            chain_id,
            config,
            errors: Default::default(),
            head: Default::default(),
            wake: Default::default(),
            soonest: std::sync::atomic::AtomicI64::new(i64::MAX),
            changes: tokio::sync::watch::channel(0).0,
            touched: tokio::sync::broadcast::channel(TOUCHED_PASSES).0,
            metrics: Default::default(),
        })
    }

    /// The store the engine keeps its transactions in.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Allocates the signer's next nonce, signs `call` with the fees the chain asks now and
    /// stores it; returns the transaction's id. Nothing is broadcast here ([`Engine::tick`]).
    pub async fn submit(&self, call: &Call) -> Result<i64, EngineError> {
        let fees = self.fees().await?;
        let mut db = self.store.begin().await?;
        let id = self.submit_in(&mut db, call, fees).await?;
        db.commit().await.map_err(StoreError::from)?;
        self.wake.notify_one();
        Ok(id)
    }

    /// [`Engine::submit`] inside the caller's database transaction `db`, with `fees` (from
    /// [`Engine::fees`], read before `db` began): the caller's own rows commit with the
    /// transaction or not at all. Call [`Engine::wake`] after the commit.
    pub async fn submit_in(
        &self,
        db: &mut DbTx,
        call: &Call,
        fees: Fees,
    ) -> Result<i64, EngineError> {
        let stored = self.submit_all_in(db, std::slice::from_ref(call), fees);
        Ok(stored.await?[0].0)
    }

    /// [`Engine::submit_in`] for many calls at once (each signer's in the order given, on
    /// consecutive nonces); their `(id, nonce)` in the order of `calls`.
    pub async fn submit_all_in(
        &self,
        db: &mut DbTx,
        calls: &[Call],
        fees: Fees,
    ) -> Result<Vec<(i64, u64)>, EngineError> {
        let keys = calls
            .iter()
            .map(|c| {
                self.signers
                    .get(&c.signer)
                    .ok_or(EngineError::UnknownSigner(c.signer))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let new: Vec<NewTransaction> = calls
            .iter()
            .map(|call| NewTransaction {
                signer: hex_address(call.signer),
                to: hex_address(call.to),
                data: call.data.to_string(),
                value: call.value.to_string(),
                gas_limit: call.gas_limit as i64,
            })
            .collect();
        let chain_id = self.chain_id;
        let ids = Store::insert_transactions(db, &new, now_ms(), |i, nonce| {
            let call = &calls[i];
            sign(
                keys[i],
                chain_id,
                nonce,
                call.to,
                &call.data,
                call.value,
                call.gas_limit,
                fees,
            )
        })
        .await?;
        tracing::debug!(count = ids.len(), "transactions stored");
        Ok(ids)
    }

    /// Fee caps for a transaction sent now: read from the chain at most once per poll interval
    /// (at least 1 s), so a burst of submissions costs one read.
    pub async fn fees(&self) -> Result<Fees, EngineError> {
        Ok(self.head().await?.0)
    }

    /// The latest block's timestamp (unix seconds), read as [`Engine::fees`] is: the clock the
    /// contracts check deadlines against (a dev chain's runs ahead of the wall clock).
    pub async fn chain_time(&self) -> Result<u64, EngineError> {
        Ok(self.head().await?.1)
    }

    async fn head(&self) -> Result<(Fees, u64), EngineError> {
        let fresh = self.config.poll.max(Duration::from_secs(1));
        if let Some((at, fees, time)) = *self.head.lock().unwrap_or_else(|e| e.into_inner()) {
            if at.elapsed() < fresh {
                return Ok((fees, time));
            }
        }
        let block = self.client.latest_block().await?;
        let base: u128 = block.base_fee_per_gas.unwrap_or_default().saturating_to();
        let tip = self.client.max_priority_fee().await?;
        let fees = Fees::for_next_block(base, tip);
        let time: u64 = block.timestamp.to();
        *self.head.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((std::time::Instant::now(), fees, time));
        Ok((fees, time))
    }

    /// Asks the engine to look at its transactions now rather than at its next poll.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// A receiver that changes after every pass of the engine that looked at transactions.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The ids of the transactions each later pass looked at (and may have changed): what a
    /// request waiting on one transaction listens to, instead of reading it again after every
    /// pass. A receiver that falls more than [`TOUCHED_PASSES`] passes behind is told so.
    pub fn touched(&self) -> tokio::sync::broadcast::Receiver<Arc<[i64]>> {
        self.touched.subscribe()
    }

    /// What the engine measured.
    pub fn metrics(&self) -> &crate::engine::metrics::EngineMetrics {
        &self.metrics
    }

    /// The relayer's signers.
    pub fn signers(&self) -> Vec<Address> {
        let mut all: Vec<Address> = self.signers.keys().copied().collect();
        all.sort();
        all
    }

    /// Looks at every transaction that is due: sends the signed ones, finds receipts,
    /// replaces stuck ones, confirms mined ones. Returns how many it looked at. An RPC error
    /// postpones the one transaction it hit (and that signer's later ones, to keep the order).
    pub async fn tick(&self) -> Result<usize, EngineError> {
        let mine: Vec<String> = self.signers.keys().map(|a| hex_address(*a)).collect();
        let now = now_ms();
        let lease = self.config.signer_lease.as_millis() as i64;
        let owned = self
            .store
            .own_signers(&self.config.owner, &mine, now, now + lease)
            .await?;
        let rows = self.store.due_transactions(&owned, now, 256).await?;
        // Each signer's transactions in nonce order, the signers side by side: one signer's
        // node round trips and commits need not wait for another's.
        let mut by_signer: Vec<(Address, Vec<&TxRow>)> = Vec::new();
        for row in &rows {
            match by_signer.iter_mut().find(|(s, _)| *s == row.signer) {
                Some((_, mine)) => mine.push(row),
                None => by_signer.push((row.signer, vec![row])),
            }
        }
        let ticks = by_signer.iter().map(|(_, mine)| self.tick_signer(mine));
        let results = futures_util::future::join_all(ticks).await;
        if !rows.is_empty() {
            // Nobody listening is no error.
            let _ = self.touched.send(rows.iter().map(|r| r.id).collect());
        }
        for result in results {
            result?;
        }
        Ok(rows.len())
    }

    /// One signer's due transactions, in nonce order; after a node error the rest wait.
    async fn tick_signer(&self, rows: &[&TxRow]) -> Result<(), EngineError> {
        for row in rows {
            let outcome = match row.status {
                TxStatus::Signed => self.broadcast(row).await,
                TxStatus::Submitted => self.check(row).await,
                TxStatus::Mined => self.confirm(row).await,
                TxStatus::Confirmed | TxStatus::Failed => Ok(()),
            };
            let errors_in_a_row = {
                let mut errors = self.errors.lock().unwrap_or_else(|e| e.into_inner());
                match &outcome {
                    Ok(()) => {
                        errors.remove(&row.id);
                        0
                    }
                    Err(_) => {
                        let n = errors.entry(row.id).or_insert(0);
                        *n += 1;
                        *n
                    }
                }
            };
            if let Err(e) = outcome {
                let EngineError::Rpc(e) = e else {
                    return Err(e);
                };
                tracing::warn!(id = row.id, error = %e, "node error; retrying later");
                self.metrics.rpc_errors.inc();
                let backoff = backoff(
                    self.poll_ms(),
                    self.config.max_backoff.as_millis() as i64,
                    errors_in_a_row,
                );
                self.store
                    .reschedule(row.id, now_ms() + backoff, Some(&e.to_string()))
                    .await?;
                break;
            }
        }
        Ok(())
    }

    /// Ticks until `stop` resolves (unless this process does not send), then gives up its
    /// signers for another process to take at once.
    pub async fn run(&self, stop: impl std::future::Future<Output = ()>) {
        tokio::pin!(stop);
        if !self.config.send {
            return stop.await;
        }
        self.send_until(stop).await;
        if let Err(e) = self.release().await {
            tracing::warn!(error = %e, "could not release the signers");
        }
    }

    /// Gives up this process's signers.
    pub async fn release(&self) -> Result<(), EngineError> {
        Ok(self.store.release_signers(&self.config.owner).await?)
    }

    async fn send_until(&self, stop: impl std::future::Future<Output = ()>) {
        tokio::pin!(stop);
        loop {
            match self.tick().await {
                Ok(0) => {}
                Ok(_) => {
                    self.changes.send_modify(|n| *n += 1);
                }
                Err(e) => tracing::error!(error = %e, "engine tick failed"),
            }
            tokio::select! {
                _ = &mut stop => return,
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(self.next_wait()) => {}
            }
        }
    }

    /// Sends a stored transaction's newest attempt for the first time.
    async fn broadcast(&self, row: &TxRow) -> Result<(), EngineError> {
        let attempts = self.store.attempts(row.id).await?;
        let newest = attempts.first().ok_or_else(|| corrupt(row, "no attempt"))?;
        // Marked before it is sent: a `signed` row is then never on chain, which the payment
        // checks rely on; if the send fails, `check` finds it unknown and sends it again.
        let now = now_ms();
        let first_look = now + self.poll_ms().min(FIRST_LOOK.as_millis() as i64);
        self.store.mark_submitted(row.id, now, first_look).await?;
        self.soonest
            .fetch_min(first_look, std::sync::atomic::Ordering::Relaxed);
        match self.send_raw(&newest.raw).await? {
            Sent::Accepted => {
                self.metrics
                    .submit_latency
                    .observe((now_ms() - row.created_at) as f64 / 1000.0);
            }
            // Its nonce is used: by one of its own attempts (a receipt settles it) or by
            // another transaction; `check` tells which.
            Sent::NonceUsed => self.check(row).await?,
        }
        Ok(())
    }

    /// A submitted transaction: a receipt for any attempt makes it mined; otherwise it is sent
    /// again if the node lost it, replaced if stuck, or failed if its nonce went elsewhere.
    async fn check(&self, row: &TxRow) -> Result<(), EngineError> {
        // The chain's nonce is read before the receipts: if it has passed this transaction's
        // and still no attempt has a receipt, none was mined (one mined in between would have
        // its receipt by then), so "failed" is never said of a transaction that was mined.
        let mined_nonce = self.client.mined_nonce(row.signer, None).await?;
        let attempts = self.store.attempts(row.id).await?;
        for a in &attempts {
            if let Some(r) = self.client.receipt(a.hash).await? {
                self.metrics
                    .mine_latency
                    .observe((now_ms() - row.created_at) as f64 / 1000.0);
                let next = now_ms() + self.poll_ms();
                self.store
                    .mark_mined(
                        row.id,
                        a.hash,
                        r.block() as i64,
                        r.block_hash,
                        i64::from(r.succeeded()),
                        next,
                    )
                    .await?;
                return self.confirm_at(row.id, r.block()).await;
            }
        }
        if mined_nonce > row.nonce as u64 {
            // No attempt has a receipt, yet the nonce is spent: another transaction of this
            // key took it. This one can never be mined.
            self.store
                .set_status(
                    row.id,
                    TxStatus::Failed,
                    i64::MAX,
                    Some("nonce taken by another transaction of this signer"),
                )
                .await?;
            tracing::warn!(
                id = row.id,
                nonce = row.nonce,
                "nonce taken elsewhere; failed"
            );
            return Ok(());
        }
        let newest = attempts.first().ok_or_else(|| corrupt(row, "no attempt"))?;
        let stuck = row.submitted_at.is_some_and(|at| {
            now_ms() - at > (self.config.stuck_after.as_millis() as i64) * (newest.attempt + 1)
        });
        if stuck {
            self.replace(row, newest).await?;
        } else if !self.node_knows(newest.hash).await? {
            // Dropped from the node's pool (restart, eviction): the same bytes again.
            tracing::info!(id = row.id, hash = %newest.hash, "resending a dropped transaction");
            self.send_raw(&newest.raw).await?;
        }
        let now = now_ms();
        self.store
            .mark_submitted(row.id, now, now + self.poll_ms())
            .await?;
        Ok(())
    }

    /// A replacement of `row` with fees raised over `newest`'s, stored before it is sent.
    async fn replace(
        &self,
        row: &TxRow,
        newest: &crate::store::AttemptRow,
    ) -> Result<(), EngineError> {
        let key = self
            .signers
            .get(&row.signer)
            .ok_or(EngineError::UnknownSigner(row.signer))?;
        let old = Fees {
            max_fee_per_gas: newest.max_fee,
            max_priority_fee_per_gas: newest.max_priority_fee,
        };
        let fees = old.replacement(self.client.fees().await?);
        let attempt = sign(
            key,
            self.chain_id,
            row.nonce as u64,
            row.to,
            &row.data,
            row.value,
            row.gas_limit as u64,
            fees,
        );
        let n = self.store.add_attempt(row.id, &attempt, now_ms()).await?;
        tracing::info!(
            id = row.id,
            attempt = n,
            max_fee = fees.max_fee_per_gas,
            "replacing a stuck transaction"
        );
        self.send_raw(&attempt.raw).await?;
        Ok(())
    }

    /// A mined transaction: confirmed once deep enough; back to submitted if its receipt is
    /// gone or moved (a reorg).
    async fn confirm(&self, row: &TxRow) -> Result<(), EngineError> {
        let hash = row.mined_hash.ok_or_else(|| corrupt(row, "mined hash"))?;
        match self.client.receipt(hash).await? {
            Some(r) if Some(r.block_hash) == row.block_hash => {
                self.confirm_at(row.id, r.block()).await
            }
            _ => {
                tracing::warn!(id = row.id, "receipt gone or moved (reorg); checking again");
                self.store
                    .set_status(row.id, TxStatus::Submitted, now_ms(), None)
                    .await?;
                Ok(())
            }
        }
    }

    /// Confirms transaction `id` (mined in `block`) once deep enough, else looks again later.
    async fn confirm_at(&self, id: i64, block: u64) -> Result<(), EngineError> {
        let head = self.client.block_number().await?;
        if head.saturating_sub(block) >= self.config.confirmations {
            self.store
                .set_status(id, TxStatus::Confirmed, i64::MAX, None)
                .await?;
        } else {
            self.store
                .reschedule(id, now_ms() + self.poll_ms(), None)
                .await?;
        }
        Ok(())
    }

    /// Sends signed bytes; the node already having them (or an earlier attempt) is success.
    async fn send_raw(&self, raw: &Bytes) -> Result<Sent, EngineError> {
        match self.client.send_raw_transaction(raw).await {
            Ok(_) => Ok(Sent::Accepted),
            Err(RpcError::Node { message, .. }) => {
                let m = message.to_ascii_lowercase();
                if m.contains("already known") || m.contains("known transaction") {
                    Ok(Sent::Accepted)
                } else if m.contains("nonce too low")
                    || m.contains("replacement transaction underpriced")
                {
                    Ok(Sent::NonceUsed)
                } else {
                    Err(RpcError::Node {
                        method: "eth_sendRawTransaction",
                        code: 0,
                        message,
                        data: None,
                    }
                    .into())
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn node_knows(&self, hash: B256) -> Result<bool, EngineError> {
        let tx: serde_json::Value = self
            .client
            .request("eth_getTransactionByHash", json!([hash]))
            .await?;
        Ok(!tx.is_null())
    }

    /// How long the run loop sleeps unless woken: the poll interval, or less when a
    /// transaction sent since is due sooner.
    fn next_wait(&self) -> Duration {
        use std::sync::atomic::Ordering::Relaxed;
        let soonest = self.soonest.load(Relaxed);
        if soonest == i64::MAX {
            return self.config.poll;
        }
        let left = soonest - now_ms();
        if left <= 0 {
            // Due: look now (the pass that just ran may have started before it was).
            self.soonest.store(i64::MAX, Relaxed);
            return Duration::ZERO;
        }
        self.config.poll.min(Duration::from_millis(left as u64))
    }

    fn poll_ms(&self) -> i64 {
        self.config.poll.as_millis() as i64
    }
}

/// The wait (ms) after the `n`th error in a row: the poll interval (at least 100 ms) doubled
/// `n` times, at most `max`.
fn backoff(poll: i64, max: i64, n: u32) -> i64 {
    poll.max(100).saturating_mul(1i64 << n.min(30)).min(max)
}

enum Sent {
    Accepted,
    NonceUsed,
}

/// The signed attempt of a call.
#[allow(clippy::too_many_arguments)]
fn sign(
    key: &Key,
    chain_id: u64,
    nonce: u64,
    to: Address,
    data: &Bytes,
    value: U256,
    gas_limit: u64,
    fees: Fees,
) -> NewAttempt {
    let tx = TxEip1559 {
        chain_id,
        nonce,
        gas_limit,
        max_fee_per_gas: fees.max_fee_per_gas,
        max_priority_fee_per_gas: fees.max_priority_fee_per_gas,
        to: TxKind::Call(to),
        value,
        input: data.clone(),
        access_list: Default::default(),
    };
    let (raw, hash) = key.sign_transaction(tx);
    NewAttempt {
        hash,
        raw: Bytes::from(raw),
        max_fee: fees.max_fee_per_gas,
        max_priority_fee: fees.max_priority_fee_per_gas,
    }
}

/// Addresses are stored in lowercase hex.
fn hex_address(a: Address) -> String {
    format!("{a:#x}")
}

fn corrupt(row: &TxRow, what: &str) -> EngineError {
    EngineError::Store(StoreError::Corrupt(format!(
        "transaction {}: {what}",
        row.id
    )))
}

#[cfg(test)]
mod tests {
    use super::backoff;

    #[test]
    fn the_wait_after_errors_doubles_up_to_its_cap() {
        let waits: Vec<i64> = (1..=6).map(|n| backoff(500, 10_000, n)).collect();
        assert_eq!(waits, [1_000, 2_000, 4_000, 8_000, 10_000, 10_000]);
        // A zero poll interval still waits; many errors neither overflow nor pass the cap.
        assert_eq!(backoff(0, 30_000, 1), 200);
        assert_eq!(backoff(500, 30_000, u32::MAX), 30_000);
    }
}
