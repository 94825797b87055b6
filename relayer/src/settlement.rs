//! What mined transactions did, read from their receipts: a session's open succeeded or not, a
//! payment executed (its receipt id), went pending (its pending id) or was refused inside its
//! batch (the wallet's error from `PaymentFailed`), a provenance record got
//! its id, a feedback its index — or the decoded contract error a transaction reverted with (the call replayed on its
//! block's parent state). Runs after every engine pass that changed something.

use std::collections::hash_map::{Entry, HashMap};
use std::sync::Arc;

use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::SolEvent;
use bursar_bindings::erc8004::IIdentityRegistry;
use bursar_bindings::receipts::IReceiptRegistry;
use bursar_bindings::wallet::{ISessionWallet, PendingStatus};
use bursar_client::revert::decode_error;
use bursar_client::rpc::LogBlocks;
use serde_json::{json, Value};

use crate::kernel::json::parse_session_id;
use crate::kernel::{App, PassError};
use crate::payments::PaymentView;
use crate::store::{
    now_ms, FeedbackOutcome, OpenStatus, PaymentOutcome, PaymentRow, ProvenanceOutcome, SessionTx,
    Store, StoreError, TxRow, TxStatus,
};
use crate::webhooks;

/// One pass: returns how many outcomes it recorded. Each outcome is announced to the host's
/// webhooks before it is recorded (a payment's in the same database transaction): a crash in
/// between announces it again under the same message id, never not at all.
pub async fn settle(app: &App) -> Result<usize, PassError> {
    Ok(opens(app).await?
        + payments(app).await?
        + decisions(app).await?
        + session_ends(app, SessionTx::Revoke).await?
        + session_ends(app, SessionTx::Close).await?
        + provenance(app).await?
        + feedback(app).await?
        + agents(app).await?)
}

async fn opens(app: &App) -> Result<usize, PassError> {
    let opened = app.store.opened_sessions().await?;
    for (id, host, tx_status, receipt_status) in &opened {
        let ok = *tx_status != TxStatus::Failed && *receipt_status == Some(1);
        let (status, event) = if ok {
            (OpenStatus::Open, "session.opened")
        } else {
            (OpenStatus::Failed, "session.failed")
        };
        let data = json!({ "sessionId": id, "status": status.as_str() });
        webhooks::emit(app, host, event, id, status.as_str(), data).await?;
        app.store.set_session_status(id, status).await?;
        tracing::info!(session = %id, status = status.as_str(), "session open settled");
    }
    Ok(opened.len())
}

async fn payments(app: &App) -> Result<usize, PassError> {
    let unsettled = app.store.unsettled_payments(256).await?;
    // A batch's payments share their transaction: its receipt is read once.
    let mut receipts: HashMap<i64, Mined> = HashMap::new();
    let mut outcomes = Vec::with_capacity(unsettled.len());
    for p in &unsettled {
        if let Entry::Vacant(e) = receipts.entry(p.transaction_id) {
            let tx = transaction(app, p.transaction_id).await?;
            e.insert(mined(app, &tx).await?);
        }
        let outcome = match &receipts[&p.transaction_id] {
            Mined::Succeeded(receipt) => {
                let session = parse_session_id(&p.session_id)
                    .ok_or_else(|| StoreError::Corrupt(format!("payment {}: session id", p.id)))?;
                intent_outcome(receipt, app.contracts.wallet, session, p.intent_nonce)
            }
            Mined::Reverted(error) | Mined::Failed(error) => {
                Outcome::new(PaymentOutcome::Reverted).error(error.clone())
            }
        };
        outcomes.push((p.clone(), outcome));
    }
    record_payments(app, outcomes).await?;
    Ok(unsettled.len())
}

/// What a mined `pay` or `payBatch` did with the intent `(session, nonce)`: executed, held for
/// the owner, or refused (a batch's `PaymentFailed`, with the wallet's error). A batch may
/// also carry a refused copy of an intent it paid: the payment wins.
fn intent_outcome(
    receipt: &bursar_client::rpc::Receipt,
    wallet: Address,
    session: U256,
    nonce: U256,
) -> Outcome {
    let executed = receipt
        .events::<ISessionWallet::PaymentExecuted>(wallet)
        .into_iter()
        .find(|e| e.sessionId == session && e.nonce == nonce);
    if let Some(e) = executed {
        return Outcome::new(PaymentOutcome::Executed).receipt(e.receiptId);
    }
    let pending = receipt
        .events::<ISessionWallet::PaymentPending>(wallet)
        .into_iter()
        .find(|e| e.sessionId == session && e.nonce == nonce);
    if let Some(e) = pending {
        return Outcome::new(PaymentOutcome::Pending).pending(e.pendingId);
    }
    let failed = receipt
        .events::<ISessionWallet::PaymentFailed>(wallet)
        .into_iter()
        .find(|e| e.sessionId == session && e.nonce == nonce);
    let error = match failed.and_then(|e| decode_error(&e.reason)) {
        Some(e) => (e.name, Value::Object(e.args)),
        None => no_event(),
    };
    Outcome::new(PaymentOutcome::Reverted).error(error)
}

async fn decisions(app: &App) -> Result<usize, PassError> {
    let decided = app.store.decided_payments().await?;
    for (payment, pending_id, tx_id) in &decided {
        let tx = transaction(app, *tx_id).await?;
        let wallet = app.contracts.wallet;
        let outcome = match mined(app, &tx).await? {
            Mined::Succeeded(receipt) => {
                let approved = receipt
                    .events::<ISessionWallet::PaymentApproved>(wallet)
                    .iter()
                    .any(|e| e.pendingId == *pending_id);
                let executed = receipt.events::<ISessionWallet::PaymentExecuted>(wallet);
                match executed.first() {
                    Some(e) if approved => {
                        Outcome::new(PaymentOutcome::Approved).receipt(e.receiptId)
                    }
                    _ => Outcome::new(PaymentOutcome::Rejected),
                }
            }
            // The decision did not land: the chain says what became of the payment (another
            // decision, the owner's own transaction, may have landed first).
            Mined::Reverted(error) | Mined::Failed(error) => {
                held_on_chain(app, payment, *pending_id, error).await?
            }
        };
        let undecided = outcome.outcome == PaymentOutcome::Pending;
        if let Some(row) = app.store.payment(payment, None).await? {
            record_payments(app, vec![(row, outcome)]).await?;
        }
        if undecided {
            app.store.clear_payment_decision(payment).await?;
        }
    }
    Ok(decided.len())
}

/// What pending payment `pending_id` (relayer payment `payment`) came to on chain, after a
/// decision on it did not land with `error`: still pending (it may be decided again or expire;
/// the reason is kept), approved and paid by another transaction (its receipt read from that
/// transaction's `PaymentExecuted`), or rejected.
async fn held_on_chain(
    app: &App,
    payment: &str,
    id: U256,
    error: (String, Value),
) -> Result<Outcome, PassError> {
    let wallet = app.contracts.wallet;
    let held = app
        .client
        .view(
            None,
            wallet,
            ISessionWallet::pendingPaymentCall { pendingId: id },
        )
        .await?;
    let status = held._6;
    if status == PendingStatus::Rejected as u8 {
        return Ok(Outcome::new(PaymentOutcome::Rejected));
    }
    if status != PendingStatus::Approved as u8 {
        return Ok(Outcome::new(PaymentOutcome::Pending).error(error));
    }
    let topics = [
        vec![ISessionWallet::PaymentApproved::SIGNATURE_HASH],
        vec![B256::from(held._0)],
        vec![B256::from(id)],
    ];
    // From the block where it went pending: a node serves only so wide a range of logs.
    let from = app
        .store
        .payment(payment, None)
        .await?
        .and_then(|p| p.block_number)
        .unwrap_or_default() as u64;
    let to = app.client.block_number().await?;
    let approved = app
        .client
        .logs_matching(&[wallet], &topics, LogBlocks::Range(from, to))
        .await?;
    let mut receipt_id = None;
    if let Some(log) = approved.iter().find(|l| !l.removed) {
        if let Some(r) = app.client.receipt(log.transaction_hash).await? {
            receipt_id = r
                .events::<ISessionWallet::PaymentExecuted>(wallet)
                .into_iter()
                .find(|e| e.sessionId == held._0)
                .map(|e| e.receiptId);
        }
    }
    Ok(match receipt_id {
        Some(r) => Outcome::new(PaymentOutcome::Approved).receipt(r),
        None => Outcome::new(PaymentOutcome::Approved),
    })
}

/// What a payment's (or its decision's) receipt said.
struct Outcome {
    outcome: PaymentOutcome,
    receipt_id: Option<U256>,
    pending_id: Option<U256>,
    error: Option<(String, Value)>,
}

impl Outcome {
    fn new(outcome: PaymentOutcome) -> Self {
        Outcome {
            outcome,
            receipt_id: None,
            pending_id: None,
            error: None,
        }
    }
    fn receipt(self, id: U256) -> Self {
        Outcome {
            receipt_id: Some(id),
            ..self
        }
    }
    fn pending(self, id: U256) -> Self {
        Outcome {
            pending_id: Some(id),
            ..self
        }
    }
    fn error(self, error: (String, Value)) -> Self {
        Outcome {
            error: Some(error),
            ..self
        }
    }
}

/// Announces and records payments' outcomes, all in one database transaction: a message is
/// queued for the host's webhooks if and only if its outcome is recorded, and a pass costs
/// one commit (one fsync on SQLite) however many payments a batch settled.
async fn record_payments(app: &App, outcomes: Vec<(PaymentRow, Outcome)>) -> Result<(), PassError> {
    if outcomes.is_empty() {
        return Ok(());
    }
    let mut hosts: HashMap<String, Option<String>> = HashMap::new();
    for (p, _) in &outcomes {
        if let Entry::Vacant(e) = hosts.entry(p.session_id.clone()) {
            e.insert(app.store.session_host(&p.session_id).await?);
        }
    }
    let ids: Arc<[String]> = outcomes.iter().map(|(p, _)| p.id.clone()).collect();
    let mut db = app.store.begin().await?;
    for (mut p, o) in outcomes {
        let error = o.error.map(|(code, details)| (code, details.to_string()));
        p.outcome = Some(o.outcome);
        p.receipt_id = o.receipt_id.or(p.receipt_id);
        p.pending_id = o.pending_id.or(p.pending_id);
        p.error_code = error.as_ref().map(|e| e.0.clone());
        p.error_details = error.as_ref().map(|e| e.1.clone());
        if let Some(Some(host)) = hosts.get(&p.session_id) {
            let state = format!(
                "{}:{}",
                o.outcome.as_str(),
                p.error_code.as_deref().unwrap_or("")
            );
            let view = serde_json::to_value(PaymentView::of(app, p.clone())).unwrap_or(Value::Null);
            webhooks::emit_in(&mut db, host, "payment.updated", &p.id, &state, view).await?;
        }
        Store::set_payment_outcome(
            &mut db,
            &p.id,
            o.outcome,
            o.receipt_id,
            o.pending_id,
            error.as_ref().map(|(c, d)| (c.as_str(), d.as_str())),
        )
        .await?;
        tracing::info!(payment = %p.id, outcome = o.outcome.as_str(), "payment settled");
    }
    db.commit().await.map_err(StoreError::from)?;
    app.wakes.webhooks_due.notify_one();
    // Nobody waiting is no error.
    let _ = app.wakes.settled_payments.send(ids);
    Ok(())
}

/// Revocations and closes the relayer sent: announced once mined (with the refund of a close).
async fn session_ends(app: &App, which: SessionTx) -> Result<usize, PassError> {
    let ended = app.store.unsettled_session_transactions(which).await?;
    for (id, host, tx_id) in &ended {
        let tx = transaction(app, *tx_id).await?;
        let event = match which {
            SessionTx::Close => "session.closed",
            _ => "session.revoked",
        };
        let data = match mined(app, &tx).await? {
            Mined::Succeeded(receipt) => {
                let closed = receipt.events::<ISessionWallet::SessionClosed>(app.contracts.wallet);
                match closed.first() {
                    Some(c) => json!({
                        "sessionId": id,
                        "spent": c.spent.to_string(),
                        "refund": c.refund.to_string(),
                        "transactionHash": receipt.transaction_hash,
                    }),
                    None => json!({ "sessionId": id, "transactionHash": receipt.transaction_hash }),
                }
            }
            // Someone else revoked or closed it first, or the chain refused: not announced as
            // done by the relayer; the session's state says what it is.
            Mined::Reverted(e) | Mined::Failed(e) => {
                tracing::warn!(session = %id, error = %e.0, "{event} transaction did not land");
                app.store.settle_session_transaction(id, which).await?;
                continue;
            }
        };
        webhooks::emit(app, host, event, id, "done", data).await?;
        app.store.settle_session_transaction(id, which).await?;
    }
    Ok(ended.len())
}

async fn provenance(app: &App) -> Result<usize, PassError> {
    use ProvenanceOutcome::{Recorded, Reverted};
    let unsettled = app.store.unsettled_provenance(256).await?;
    for p in &unsettled {
        let tx = transaction(app, p.transaction_id).await?;
        let (outcome, record_id, error) = match mined(app, &tx).await? {
            Mined::Succeeded(receipt) => {
                match receipt
                    .events::<IReceiptRegistry::ProvenanceRecorded>(app.contracts.receipts)
                    .first()
                {
                    Some(e) => (Recorded, Some(e.recordId.to_string()), None),
                    None => (Reverted, None, Some(no_event())),
                }
            }
            Mined::Reverted(error) | Mined::Failed(error) => (Reverted, None, Some(error)),
        };
        let error = error.map(|(code, details)| (code, details.to_string()));
        if let Some(host) = app.store.session_host(&p.session_id).await? {
            let data = json!({
                "id": p.id,
                "sessionId": p.session_id,
                "status": if outcome == Recorded { "recorded" } else { "failed" },
                "recordId": record_id,
                "error": error.as_ref().map(|e| e.0.clone()),
            });
            let state = outcome.as_str();
            webhooks::emit(app, &host, "provenance.updated", &p.id, state, data).await?;
        }
        app.store
            .set_provenance_outcome(
                &p.id,
                outcome,
                record_id.as_deref(),
                error.as_ref().map(|(c, d)| (c.as_str(), d.as_str())),
            )
            .await?;
    }
    Ok(unsettled.len())
}

/// Agents the relayer registers: once `register` is mined, the token is handed to its owner;
/// once that is mined, the owner holds it.
async fn agents(app: &App) -> Result<usize, PassError> {
    let unsettled = app.store.unsettled_agents(64).await?;
    for a in &unsettled {
        let which = match a.agent_id {
            None => a.register_transaction,
            Some(_) => a.transfer_transaction,
        };
        let tx = transaction(app, which.ok_or(StoreError::Corrupt(a.id.clone()))?).await?;
        let error = match (mined(app, &tx).await?, a.agent_id) {
            (Mined::Succeeded(receipt), None) => {
                match receipt
                    .events::<IIdentityRegistry::Registered>(tx.to)
                    .first()
                {
                    Some(e) => {
                        crate::agents::hand_over(app, a, e.agentId).await?;
                        tracing::info!(agent = %a.id, agent_id = %e.agentId, "agent registered");
                        continue;
                    }
                    None => no_event(),
                }
            }
            (Mined::Succeeded(_), Some(agent_id)) => {
                app.store
                    .set_agent_outcome(&a.id, Some(now_ms()), None)
                    .await?;
                tracing::info!(agent = %a.id, %agent_id, owner = %a.owner, "agent handed over");
                continue;
            }
            // The hand-over did not land: the chain says who holds the agent.
            (Mined::Reverted(e) | Mined::Failed(e), Some(agent_id)) => {
                use crate::agents::AfterHandOver::{Again, Held, Stuck};
                let holder = crate::agents::holder(app, agent_id).await?;
                match crate::agents::after_failed_hand_over(a, holder) {
                    Held => {
                        app.store
                            .set_agent_outcome(&a.id, Some(now_ms()), None)
                            .await?;
                        continue;
                    }
                    Again => {
                        tracing::warn!(agent = %a.id, error = %e.0, "agent hand-over did not land; sending it again");
                        crate::agents::hand_over(app, a, agent_id).await?;
                        continue;
                    }
                    Stuck(why) => (e.0, json!({ "handover": why, "error": e.1 })),
                }
            }
            (Mined::Reverted(e) | Mined::Failed(e), None) => e,
        };
        tracing::warn!(agent = %a.id, error = %error.0, "agent registration failed");
        let details = error.1.to_string();
        app.store
            .set_agent_outcome(&a.id, None, Some((&error.0, &details)))
            .await?;
    }
    Ok(unsettled.len())
}

async fn feedback(app: &App) -> Result<usize, PassError> {
    use FeedbackOutcome::{Given, Reverted};
    let unsettled = app.store.unsettled_feedback(256).await?;
    for f in &unsettled {
        let tx = transaction(app, f.transaction_id).await?;
        let (outcome, index, error) = match mined(app, &tx).await? {
            Mined::Succeeded(receipt) => {
                match receipt
                    .events::<IReceiptRegistry::ReceiptFeedbackGiven>(app.contracts.receipts)
                    .first()
                {
                    Some(e) => (Given, Some(e.feedbackIndex), None),
                    None => (Reverted, None, Some(no_event())),
                }
            }
            Mined::Reverted(error) | Mined::Failed(error) => (Reverted, None, Some(error)),
        };
        let error = error.map(|(code, details)| (code, details.to_string()));
        if let Some(host) = app.store.session_host(&f.session_id).await? {
            let data = json!({
                "id": f.id,
                "sessionId": f.session_id,
                "agentId": f.agent_id.to_string(),
                "status": if outcome == Given { "given" } else { "failed" },
                "feedbackIndex": index,
                "error": error.as_ref().map(|e| e.0.clone()),
            });
            let state = outcome.as_str();
            webhooks::emit(app, &host, "feedback.updated", &f.id, state, data).await?;
        }
        app.store
            .set_feedback_outcome(
                &f.id,
                outcome,
                index,
                error.as_ref().map(|(c, d)| (c.as_str(), d.as_str())),
            )
            .await?;
    }
    Ok(unsettled.len())
}

fn no_event() -> (String, Value) {
    ("NoEvent".into(), serde_json::json!({}))
}

#[derive(Clone)]
enum Mined {
    Succeeded(bursar_client::rpc::Receipt),
    /// Mined and reverted: the contract error's name and arguments.
    Reverted((String, Value)),
    /// Never mined (its nonce went to another transaction).
    Failed((String, Value)),
}

async fn transaction(app: &App, id: i64) -> Result<TxRow, PassError> {
    app.store
        .transaction(id)
        .await?
        .ok_or_else(|| StoreError::Corrupt(format!("transaction {id} is gone")).into())
}

async fn mined(app: &App, tx: &TxRow) -> Result<Mined, PassError> {
    let corrupt = |what: &str| StoreError::Corrupt(format!("transaction {}: {what}", tx.id));
    let Some(hash) = tx.mined_hash else {
        let reason = tx.last_error.clone().unwrap_or_default();
        return Ok(Mined::Failed((
            "TransactionFailed".into(),
            serde_json::json!({ "reason": reason }),
        )));
    };
    if tx.receipt_status == Some(1) {
        let receipt = app
            .client
            .receipt(hash)
            .await?
            .ok_or_else(|| corrupt("receipt gone"))?;
        return Ok(Mined::Succeeded(receipt));
    }
    let block = tx
        .block_number
        .ok_or_else(|| corrupt("mined without a block"))? as u64;
    let reason = app
        .client
        .revert_reason(hash, tx.signer, tx.to, &tx.data, block)
        .await?;
    Ok(Mined::Reverted(
        match reason.as_deref().and_then(|r| decode_error(r)) {
            Some(e) => (e.name, Value::Object(e.args)),
            None => ("Reverted".into(), serde_json::json!({})),
        },
    ))
}

#[cfg(test)]
mod tests {
    use alloy_sol_types::{SolError, SolEvent};

    use super::*;

    /// A receipt of `wallet` emitting `events` (topics and data).
    fn receipt(
        wallet: Address,
        events: &[alloy_primitives::LogData],
    ) -> bursar_client::rpc::Receipt {
        let logs: Vec<Value> = events
            .iter()
            .enumerate()
            .map(|(i, e)| {
                json!({
                    "address": wallet, "topics": e.topics(), "data": e.data,
                    "blockNumber": "0x1", "blockHash": B256::ZERO,
                    "transactionHash": B256::ZERO, "logIndex": format!("{i:#x}"),
                })
            })
            .collect();
        serde_json::from_value(json!({
            "transactionHash": B256::ZERO, "blockNumber": "0x1", "blockHash": B256::ZERO,
            "status": "0x1", "gasUsed": "0x1", "effectiveGasPrice": "0x1", "logs": logs,
        }))
        .unwrap()
    }

    #[test]
    fn each_intent_of_a_batch_gets_its_own_outcome() {
        let wallet = Address::repeat_byte(0x57);
        let (s1, s2) = (U256::from(1), U256::from(2));
        let executed = |session, nonce, receipt| {
            ISessionWallet::PaymentExecuted {
                sessionId: session,
                to: Address::repeat_byte(0xa1),
                receiptId: U256::from(receipt),
                amount: U256::from(5),
                purpose: B256::ZERO,
                nonce: U256::from(nonce),
            }
            .encode_log_data()
        };
        let failed = |session, nonce, reason: Vec<u8>| {
            ISessionWallet::PaymentFailed {
                sessionId: session,
                nonce: U256::from(nonce),
                reason: reason.into(),
            }
            .encode_log_data()
        };
        let budget = ISessionWallet::WalletPeriodBudgetExceeded {
            amount: U256::from(9),
            available: U256::from(4),
        };
        let used = ISessionWallet::WalletNonceUsed {
            nonce: U256::from(7),
        };
        let r = receipt(
            wallet,
            &[
                // Session 2 under the same nonce as session 1's payment, refused.
                failed(s2, 7, budget.abi_encode()),
                // A refused copy of session 1's nonce 7, then its payment.
                failed(s1, 7, used.abi_encode()),
                executed(s1, 7, 41),
                ISessionWallet::PaymentPending {
                    sessionId: s1,
                    to: Address::repeat_byte(0xa1),
                    pendingId: U256::from(3),
                    amount: U256::from(50),
                    purpose: B256::ZERO,
                    nonce: U256::from(8),
                    expiresAt: 0,
                }
                .encode_log_data(),
            ],
        );
        let paid = intent_outcome(&r, wallet, s1, U256::from(7));
        assert_eq!(
            (paid.outcome, paid.receipt_id),
            (PaymentOutcome::Executed, Some(U256::from(41)))
        );
        let held = intent_outcome(&r, wallet, s1, U256::from(8));
        assert_eq!(
            (held.outcome, held.pending_id),
            (PaymentOutcome::Pending, Some(U256::from(3)))
        );
        let refused = intent_outcome(&r, wallet, s2, U256::from(7));
        assert_eq!(refused.outcome, PaymentOutcome::Reverted);
        let (code, details) = refused.error.unwrap();
        assert_eq!(code, "WalletPeriodBudgetExceeded");
        assert_eq!(details["available"], "4");
        // Another wallet's events, or none at all, say nothing of the intent.
        let missing = intent_outcome(&r, Address::repeat_byte(1), s1, U256::from(7));
        assert_eq!(missing.error.unwrap().0, "NoEvent");
    }
}
