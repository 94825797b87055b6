//! Group commit of payments. A payment the contracts' rules allow (checked by the request's
//! handler, concurrently with others) waits here for the one task that queues payments. That
//! task takes every payment that has arrived, checks each against its session's payments
//! already queued (one read of the session per batch), then stores them all — intent nonces,
//! signed transactions, payment rows — in one database transaction.
//!
//! Why: a burst of payments costs one commit (one fsync on SQLite) and a statement per
//! session, per signer and per few hundred rows, instead of nine statements and a commit each.
//! And because one task checks the payments in order, each check sees the payments before it,
//! with no lock per session.
//!
//! The task keeps each session's payments stored but not yet on chain in memory (loaded from
//! the database the first time it meets the session). A session's transactions are all sent by
//! its one signer, in nonce order, so the signer's nonce at a block says which of them that
//! block's state holds already: one read per signer, not one per payment. The session's state
//! is read once per block. The check errs only towards accepting: the wallet enforces the
//! budget on chain regardless.
//!
//! Several relayer processes may share a PostgreSQL database, each with its own queue task.
//! Each session has a queue version in the database, advanced by every commit that queues its
//! payments. A task stores payments only if their sessions are still at the versions its
//! knowledge is at; else another process queued payments meanwhile, and the task reads those
//! sessions again and checks the payments anew. So the processes together never accept more
//! than a session's budget, and a sandbox's intent is never queued by two of them.

use std::collections::{HashMap, HashSet};

use alloy_primitives::{Address, U256};
use alloy_sol_types::SolCall;
use bursar_bindings::wallet::{batch, ISessionWallet};

use super::budget::{nonce_used, Budget, InFlight};
use crate::engine::random::random_bytes;
use crate::engine::submission::Call;
use crate::kernel::inbox::{Accepted, IntentSigner, Reply};
use crate::kernel::session::{parse_id, terms_of};
use crate::kernel::{App, Error};
use crate::store::{now_ms, DbTx, NewPayment, PaymentRow, SessionRow, Store, TxStatus, Unmined};
use bursar_client::Fees;

/// Payments stored in one database transaction at most.
pub(crate) const MAX_BATCH: usize = 256;

/// Intents one `payBatch` transaction carries at most. Past about 50 a payment costs little
/// less (47,722 gas at 50, 41,468 at 200: `--bench devnet`'s `batch_gas`).
pub(crate) const BATCH_INTENTS: usize = 100;

/// A `payBatch`'s gas limit at most: a block holds one such batch beside smaller transactions
/// (Arbitrum's blocks, and the devnet's, hold 30,000,000 or more).
const BATCH_GAS: u64 = 24_000_000;

/// What a batch adds once to its intents' own limits: the wallet's delegate call to its
/// extension and the batch's own calldata head.
const BATCH_OVERHEAD_GAS: u64 = 40_000;

/// The intrinsic gas of a transaction, which each intent's own `pay` limit includes and a
/// batch pays once.
const INTRINSIC_GAS: u64 = 21_000;

/// Times a batch is checked again because another process queued for its sessions meanwhile.
const ATTEMPTS: usize = 4;

/// Checks `batch` against its sessions' payments in flight (kept in `in_flight`), stores those
/// that fit, and answers each.
pub(crate) async fn queue_batch(
    app: &App,
    in_flight: &mut InFlightPayments,
    mut batch: Vec<(Accepted, Reply)>,
) {
    for attempt in 1..=ATTEMPTS {
        batch = match queue_once(app, in_flight, batch).await {
            Some(stale) if attempt < ATTEMPTS => stale,
            // The sessions are that busy in other processes: the client retries.
            Some(stale) => {
                for (_, reply) in stale {
                    let _ = reply.send(Err(Error::Unavailable));
                }
                return;
            }
            None => return,
        };
    }
}

/// [`queue_batch`] once; answers the payments checked against what another process changed
/// meanwhile, unanswered, to be checked again (their sessions forgotten).
async fn queue_once(
    app: &App,
    in_flight: &mut InFlightPayments,
    batch: Vec<(Accepted, Reply)>,
) -> Option<Vec<(Accepted, Reply)>> {
    let mut budgets = match in_flight.budgets(app, &batch).await {
        Ok(budgets) => budgets,
        Err(e) => {
            for (_, reply) in batch {
                let _ = reply.send(Err(e.clone()));
            }
            return None;
        }
    };
    let mut admitted = Vec::with_capacity(batch.len());
    // Sandbox-signed intents admitted in this batch, by session and nonce.
    let mut signed: HashSet<(String, U256)> = HashSet::new();
    for (payment, reply) in batch {
        let taken = in_flight.check_nonce(&payment, &signed).and_then(|()| {
            match budgets.get_mut(&payment.session.id) {
                Some(budget) => budget.take(payment.intent.amount, payment.executes),
                None => Ok(()),
            }
        });
        match taken {
            Ok(()) => {
                if !payment.custodial() {
                    signed.insert((payment.session.id.clone(), payment.intent.nonce));
                }
                admitted.push((payment, reply))
            }
            // A refusal stands: knowledge gone stale only ever lacks other processes'
            // payments, which would refuse more.
            Err(e) => {
                let _ = reply.send(Err(e));
            }
        }
    }
    if admitted.is_empty() {
        return None;
    }
    let payments: Vec<&Accepted> = admitted.iter().map(|(p, _)| p).collect();
    let stored = store(app, in_flight, &payments).await;
    in_flight.record(&payments, &stored);
    match stored {
        Ok(stored) => {
            for ((_, reply), (view, _)) in admitted.into_iter().zip(stored) {
                let _ = reply.send(Ok(view));
            }
        }
        Err(Staged::Stale) => return Some(admitted),
        // Nothing was committed: one payment's trouble (an idempotency key stored meanwhile)
        // must not refuse the others, so each is tried alone.
        Err(Staged::NotCommitted(_)) if admitted.len() > 1 => {
            for (payment, reply) in admitted {
                let alone = store(app, in_flight, &[&payment]).await;
                in_flight.record(&[&payment], &alone);
                let _ = reply.send(alone.map(|mut v| v.remove(0).0).map_err(Staged::into_error));
            }
        }
        Err(e) => {
            let e = e.into_error();
            for (_, reply) in admitted {
                let _ = reply.send(Err(e.clone()));
            }
        }
    }
    None
}

/// What the queue task knows of sessions' payments in flight.
#[derive(Default)]
pub(crate) struct InFlightPayments {
    sessions: HashMap<String, InFlight>,
    /// Each signer's nonce at a block, and the block (a block's state never changes).
    mined: HashMap<Address, (u64, u64)>,
}

impl InFlightPayments {
    /// Sessions remembered at most; past this, those with nothing in flight are forgotten.
    const SESSIONS: usize = 10_000;

    /// The budget of each session in `batch` that has payments in flight, or several in the
    /// batch (a lone payment was checked alone by the simulation already).
    async fn budgets(
        &mut self,
        app: &App,
        batch: &[(Accepted, Reply)],
    ) -> Result<HashMap<String, Budget>, Error> {
        let mut sessions: HashMap<&str, (&SessionRow, usize)> = HashMap::new();
        for (p, _) in batch {
            sessions.entry(&p.session.id).or_insert((&p.session, 0)).1 += 1;
        }
        let unknown: Vec<&str> = sessions
            .keys()
            .copied()
            .filter(|id| !self.sessions.contains_key(*id))
            .collect();
        if !unknown.is_empty() {
            if self.sessions.len() + unknown.len() > Self::SESSIONS {
                self.sessions.retain(|_, f| !f.payments.is_empty());
            }
            let versions = app.store.queue_versions(&unknown).await?;
            let rows = app.store.unmined_payments(&unknown).await?;
            for id in unknown {
                self.sessions.insert(id.to_owned(), InFlight::default());
            }
            for (id, version) in versions {
                if let Some(f) = self.sessions.get_mut(&id) {
                    f.version = version;
                }
            }
            for u in rows {
                if let Some(f) = self.sessions.get_mut(&u.session_id) {
                    push_unmined(f, &u)?;
                }
            }
        }
        let checked: Vec<&SessionRow> = sessions
            .values()
            .filter(|(s, in_batch)| *in_batch > 1 || !self.sessions[&s.id].payments.is_empty())
            .map(|(s, _)| *s)
            .collect();
        if checked.is_empty() {
            return Ok(HashMap::new());
        }
        // Everything below is read at one block.
        let block = app.client.block_number().await?;
        let mut signers: Vec<Address> = checked.iter().map(|s| s.signer).collect();
        signers.sort_unstable();
        signers.dedup();
        let mined = futures_util::future::try_join_all(signers.iter().map(|s| {
            let cached = self.mined.get(s).filter(|(at, _)| *at == block).copied();
            async move {
                match cached {
                    Some((_, nonce)) => Ok::<_, Error>(nonce),
                    None => Ok(app.client.mined_nonce(*s, Some(block)).await?),
                }
            }
        }));
        let states = futures_util::future::try_join_all(checked.iter().map(|s| {
            let cached = self.sessions[&s.id].state.filter(|(at, ..)| *at == block);
            async move {
                match cached {
                    Some((_, deposit, period)) => Ok((deposit, period)),
                    None => session_state(app, s, block).await,
                }
            }
        }));
        let (mined, states) = tokio::try_join!(mined, states)?;
        for (s, nonce) in signers.iter().zip(&mined) {
            self.mined.insert(*s, (block, *nonce));
        }
        let mined: HashMap<Address, u64> = signers.into_iter().zip(mined).collect();
        let mut budgets = HashMap::with_capacity(checked.len());
        for (s, (deposit, period)) in checked.into_iter().zip(states) {
            let f = self.sessions.get_mut(&s.id).ok_or(Error::Internal)?;
            f.settle(mined[&s.signer], block);
            f.state = Some((block, deposit, period));
            budgets.insert(s.id.clone(), Budget::left(deposit, period, f));
        }
        Ok(budgets)
    }

    /// Refuses a sandbox-signed intent whose nonce another payment of its session in flight,
    /// settled lately, or `signed` earlier in this batch already uses, as the wallet would
    /// refuse it on chain: a replayed intent (whose revert the relayer's signer would pay).
    fn check_nonce(
        &self,
        payment: &Accepted,
        signed: &HashSet<(String, U256)>,
    ) -> Result<(), Error> {
        let nonce = payment.intent.nonce;
        let in_flight = self
            .sessions
            .get(&payment.session.id)
            .is_some_and(|f| f.uses(&nonce));
        if payment.custodial()
            || !(in_flight || signed.contains(&(payment.session.id.clone(), nonce)))
        {
            return Ok(());
        }
        Err(nonce_used(nonce))
    }

    /// The queue version each session of `payments` is known at, once per session; `None`
    /// when one is not known (forgotten after a commit of unknown outcome).
    fn versions<'a>(&self, payments: &[&'a Accepted]) -> Option<Vec<(&'a str, i64)>> {
        let mut versions: Vec<(&str, i64)> = Vec::new();
        for p in payments {
            let id = p.session.id.as_str();
            if !versions.iter().any(|(v, _)| *v == id) {
                versions.push((id, self.sessions.get(id)?.version));
            }
        }
        Some(versions)
    }

    /// Remembers what [`store`] stored; after a commit whose outcome is unknown, or one
    /// refused because another process queued for a session meanwhile, forgets the sessions
    /// involved (the database is asked again).
    fn record(&mut self, payments: &[&Accepted], stored: &Result<Vec<(PaymentRow, u64)>, Staged>) {
        match stored {
            Ok(stored) => {
                if let Some(versions) = self.versions(payments) {
                    for (id, _) in versions {
                        if let Some(f) = self.sessions.get_mut(id) {
                            f.version += 1;
                        }
                    }
                }
                for (p, (view, tx_nonce)) in payments.iter().zip(stored) {
                    if let Some(f) = self.sessions.get_mut(&p.session.id) {
                        f.push(*tx_nonce, p.intent.amount, p.executes, view.intent_nonce);
                    }
                }
            }
            Err(Staged::Commit(_) | Staged::Stale) => {
                for p in payments {
                    self.sessions.remove(&p.session.id);
                }
            }
            Err(Staged::NotCommitted(_)) => {}
        }
    }
}

fn push_unmined(f: &mut InFlight, u: &Unmined) -> Result<(), Error> {
    f.push(
        u.tx_nonce as u64,
        u.amount,
        u.expect_executed,
        u.intent_nonce,
    );
    Ok(())
}

/// Queues `call`, an x402 reservation of `amount` of `session` under the session's intent
/// nonce `intent_nonce`, if what the session's payments and reservations stored but not yet on
/// chain leave allows it; else refuses with the wallet's error (saying what is queued). The
/// check this task gives a payment, for a transaction that does not pass through it (sent
/// after those payments by the same signer): it stores only if no process queued for the
/// session since it looked (else it looks again), and the reservation's row makes every
/// process's queue count it until it is mined. Answers the transaction's id.
pub(crate) async fn queue_reservation(
    app: &App,
    session: &SessionRow,
    call: &Call,
    amount: U256,
    intent_nonce: u64,
) -> Result<i64, Error> {
    let id = session.id.as_str();
    for _ in 0..ATTEMPTS {
        let versions = app.store.queue_versions(&[id]).await?;
        let version = versions.first().ok_or(Error::Internal)?.1;
        check_room(app, session, amount).await?;
        let fees = app.engine.fees().await?;
        let mut db = app.store.begin().await?;
        // The session's row before the signer's, in the queue task's order (not `App::queue`'s,
        // signer first), so that two processes' transactions never deadlock.
        if Store::advance_queue_versions(&mut db, &[(id, version)])
            .await?
            .is_empty()
        {
            // Another process queued for the session meanwhile (`db` rolls back).
            continue;
        }
        let tx = app.engine.submit_in(&mut db, call, fees).await?;
        let (amount, nonce) = (amount.to_string(), intent_nonce.to_string());
        Store::add_reservation(&mut db, tx, id, &amount, &nonce).await?;
        app.commit(db).await?;
        return Ok(tx);
    }
    Err(Error::Unavailable)
}

/// Refuses to take `amount` from `session`'s deposit and period budget when what its payments
/// and reservations stored but not yet on chain leave is less, with the wallet's error. Like
/// the task's check, it errs only towards accepting.
async fn check_room(app: &App, session: &SessionRow, amount: U256) -> Result<(), Error> {
    let block = app.client.block_number().await?;
    let signer = session.signer;
    let mined = async { Ok::<_, Error>(app.client.mined_nonce(signer, Some(block)).await?) };
    let unmined = async { Ok::<_, Error>(app.store.unmined_payments(&[&session.id]).await?) };
    let (mined, (deposit, period), rows) =
        tokio::try_join!(mined, session_state(app, session, block), unmined)?;
    let mut f = InFlight::default();
    for u in &rows {
        push_unmined(&mut f, u)?;
    }
    f.settle(mined, block);
    Budget::left(deposit, period, &f).take(amount, true)
}

/// The deposit and period budget `session` has left by its state at `block`, as the wallet
/// computes them: the deposit less what was spent and what pending payments hold; the
/// period's budget less its spend (the view rolls the period forward).
async fn session_state(app: &App, session: &SessionRow, block: u64) -> Result<(U256, U256), Error> {
    let state = app
        .client
        .view_at(
            None,
            app.contracts.wallet,
            ISessionWallet::sessionStateCall {
                sessionId: parse_id(&session.id)?,
            },
            Some(block),
        )
        .await?;
    let terms = terms_of(session)?;
    let deposit = state._1.saturating_sub(state._2).saturating_sub(state._3);
    let period = match terms.periodSeconds {
        0 => U256::MAX,
        _ => terms.periodBudget.saturating_sub(state._4),
    };
    Ok((deposit, period))
}

/// Why [`store`] failed: before its commit (nothing stored), because another process queued
/// for a session since it was checked (nothing stored), or at the commit (unknown).
enum Staged {
    NotCommitted(Error),
    Stale,
    Commit(Error),
}

impl Staged {
    fn into_error(self) -> Error {
        match self {
            Staged::NotCommitted(e) | Staged::Commit(e) => e,
            Staged::Stale => Error::Unavailable,
        }
    }
}

/// Stores `payments` in one database transaction, if their sessions are still at the queue
/// versions `in_flight` knows: each session's custodial intents take consecutive intent
/// nonces, each is signed, its transaction queued with the engine and its row written.
/// Answers each payment's view and its transaction's nonce.
async fn store(
    app: &App,
    in_flight: &InFlightPayments,
    payments: &[&Accepted],
) -> Result<Vec<(PaymentRow, u64)>, Staged> {
    let versions = in_flight.versions(payments).ok_or(Staged::Stale)?;
    let (db, views) = stage(app, &versions, payments).await?;
    app.commit(db).await.map_err(Staged::Commit)?;
    for (p, (row, _)) in payments.iter().zip(&views) {
        tracing::info!(session = %row.session_id, payment = %row.id, to = %p.intent.to, amount = %row.amount, "payment queued");
    }
    Ok(views)
}

/// What an intent adds to a batch's gas limit: its own `pay` limit without the intrinsic gas.
fn batch_gas(p: &Accepted) -> u64 {
    p.gas.saturating_sub(INTRINSIC_GAS)
}

/// The transactions that carry `payments` (their intents under `nonces`): each signer's
/// payments in this tick go out together, a `payBatch` per [`BATCH_INTENTS`] of them, a lone
/// one as `pay` (a batch of one costs a delegate call more). Answers the calls and, for each
/// payment, the index of the call that carries it.
///
/// A batch's gas limit is what its intents' own `pay` limits leave after the intrinsic gas
/// they each include, plus [`BATCH_OVERHEAD_GAS`]: an intent costs a batch less than a `pay`
/// of its own (the handler estimated that limit on the session's first payment, the dearest,
/// with a quarter on top), so a batch never runs out of gas that its payments alone would
/// not. No node is asked: the queue task would wait for an estimate, and every payment with
/// it. A chunk ends at [`BATCH_INTENTS`] or [`BATCH_GAS`]. Only the gas used is paid; the
/// limit is what the sender must be able to cover.
fn pack(app: &App, payments: &[&Accepted], nonces: &[U256]) -> (Vec<Call>, Vec<usize>) {
    let wallet = app.contracts.wallet;
    let mut signers: Vec<Address> = Vec::new();
    for p in payments {
        if !signers.contains(&p.sender) {
            signers.push(p.sender);
        }
    }
    // Each signer's payments in chunks; an intent whose signature is not 65 bytes (which the
    // wallet would refuse anyway, and a batch record cannot hold) alone.
    let mut chunks: Vec<Vec<usize>> = Vec::new();
    for signer in signers {
        let mut packable = Vec::new();
        for (i, p) in payments
            .iter()
            .enumerate()
            .filter(|(_, p)| p.sender == signer)
        {
            match &p.signer {
                IntentSigner::Sandbox(sig) if sig.len() != batch::SIGNATURE_BYTES => {
                    chunks.push(vec![i])
                }
                _ => packable.push(i),
            }
        }
        let mut chunk: Vec<usize> = Vec::new();
        let mut gas = BATCH_OVERHEAD_GAS;
        for i in packable {
            let more = batch_gas(payments[i]);
            if chunk.len() == BATCH_INTENTS || (!chunk.is_empty() && gas + more > BATCH_GAS) {
                chunks.push(std::mem::take(&mut chunk));
                gas = BATCH_OVERHEAD_GAS;
            }
            chunk.push(i);
            gas += more;
        }
        if !chunk.is_empty() {
            chunks.push(chunk);
        }
    }
    let mut calls = Vec::new();
    let mut carried_by = vec![0; payments.len()];
    for chunk in chunks {
        for &i in &chunk {
            carried_by[i] = calls.len();
        }
        let signer = payments[chunk[0]].sender;
        let signed: Vec<ISessionWallet::payCall> = chunk
            .iter()
            .map(|&i| payments[i].pay_call(nonces[i], wallet, app.chain_id))
            .collect();
        let (data, gas_limit) = match &signed[..] {
            [one] => (one.abi_encode(), payments[chunk[0]].gas),
            _ => {
                let gas: u64 = chunk.iter().map(|&i| batch_gas(payments[i])).sum();
                let data = batch::pay_batch(&signed).abi_encode();
                (data, BATCH_OVERHEAD_GAS + gas)
            }
        };
        calls.push(Call {
            signer,
            to: wallet,
            data: data.into(),
            value: U256::ZERO,
            gas_limit,
        });
    }
    (calls, carried_by)
}

async fn stage(
    app: &App,
    versions: &[(&str, i64)],
    payments: &[&Accepted],
) -> Result<(DbTx, Vec<(PaymentRow, u64)>), Staged> {
    let fees = app.engine.fees().await.map_err(not_committed)?;
    let mut db = app.store.begin().await.map_err(not_committed)?;
    let advanced = Store::advance_queue_versions(&mut db, versions)
        .await
        .map_err(not_committed)?;
    if advanced.len() < versions.len() {
        return Err(Staged::Stale);
    }
    stage_in(app, db, fees, payments)
        .await
        .map_err(Staged::NotCommitted)
}

fn not_committed(e: impl Into<Error>) -> Staged {
    Staged::NotCommitted(e.into())
}

async fn stage_in(
    app: &App,
    mut db: DbTx,
    fees: Fees,
    payments: &[&Accepted],
) -> Result<(DbTx, Vec<(PaymentRow, u64)>), Error> {
    // Each session's custodial intents take its next intent nonces; sandboxes chose theirs.
    let custodial: Vec<&str> = payments
        .iter()
        .filter(|p| p.custodial())
        .map(|p| p.session.id.as_str())
        .collect();
    let mut taken = Store::take_intent_nonces(&mut db, &custodial)
        .await?
        .into_iter();
    let nonces: Vec<U256> = payments
        .iter()
        .map(|p| match p.custodial() {
            true => taken.next().map(U256::from).ok_or(Error::Internal),
            false => Ok(p.intent.nonce),
        })
        .collect::<Result<_, _>>()?;
    let (calls, carried_by) = pack(app, payments, &nonces);
    let sent = app.engine.submit_all_in(&mut db, &calls, fees).await?;
    let txs: Vec<(i64, u64)> = carried_by.iter().map(|&call| sent[call]).collect();
    let now = now_ms();
    let rows: Vec<PaymentRow> = payments
        .iter()
        .zip(&nonces)
        .zip(&txs)
        .map(|((p, nonce), &(transaction_id, _))| PaymentRow {
            id: format!(
                "pay_{}",
                alloy_primitives::hex::encode(random_bytes::<16>())
            ),
            session_id: p.session.id.clone(),
            to: p.intent.to,
            amount: p.intent.amount,
            purpose: p.intent.purpose,
            intent_nonce: U256::from(*nonce),
            deadline: p.intent.deadline.saturating_to(),
            expect_executed: p.executes,
            transaction_id,
            created_at: now,
            tx_status: TxStatus::Signed,
            ..PaymentRow::default()
        })
        .collect();
    let new: Vec<NewPayment> = payments
        .iter()
        .zip(&rows)
        .map(|(p, r)| NewPayment {
            id: &r.id,
            session_id: &r.session_id,
            to: r.to,
            amount: r.amount,
            purpose: r.purpose,
            intent_nonce: r.intent_nonce,
            deadline: r.deadline,
            expect_executed: r.expect_executed,
            transaction_id: r.transaction_id,
            request_key: p.request_key.as_deref(),
        })
        .collect();
    Store::insert_payments(&mut db, &new, now).await?;
    let nonces = txs.iter().map(|&(_, nonce)| nonce);
    Ok((db, rows.into_iter().zip(nonces).collect()))
}
