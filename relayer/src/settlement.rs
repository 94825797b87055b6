//! What mined transactions did, read from their receipts: a session's open succeeded or not, a
//! payment executed (its receipt id) or went pending (its pending id), a provenance record got
//! its id — or the decoded contract error a transaction reverted with (the call replayed on its
//! block's parent state). Runs after every engine pass that changed something.

use alloy_primitives::{Address, Bytes, B256, U256};
use bursar_bindings::receipts::IReceiptRegistry;
use bursar_bindings::wallet::ISessionWallet;
use bursar_client::revert::decode_error;
use serde_json::{json, Value};

use crate::kernel::App;
use crate::payments::PaymentView;
use crate::store::{OpenStatus, PaymentRow, SessionTx, StoreError, TxRow, TxStatus};
use crate::webhooks;

/// Why a pass failed (it is retried).
#[derive(Debug, thiserror::Error)]
pub enum OutcomeError {
    /// The database.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The node.
    #[error(transparent)]
    Rpc(#[from] bursar_client::rpc::RpcError),
}

/// One pass: returns how many outcomes it recorded. Each outcome is announced to the host's
/// webhooks before it is recorded: a crash in between announces it again under the same
/// message id, never not at all.
pub async fn settle(app: &App) -> Result<usize, OutcomeError> {
    Ok(opens(app).await?
        + payments(app).await?
        + decisions(app).await?
        + session_ends(app, SessionTx::Revoke).await?
        + session_ends(app, SessionTx::Close).await?
        + provenance(app).await?)
}

async fn opens(app: &App) -> Result<usize, OutcomeError> {
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

async fn payments(app: &App) -> Result<usize, OutcomeError> {
    let unsettled = app.store.unsettled_payments(256).await?;
    for p in &unsettled {
        let tx = transaction(app, p.transaction_id).await?;
        let wallet = app.contracts.wallet;
        let outcome = match mined(app, &tx).await? {
            Mined::Succeeded(receipt) => {
                let nonce: U256 = p.intent_nonce.parse().unwrap_or_default();
                let executed = receipt
                    .events::<ISessionWallet::PaymentExecuted>(wallet)
                    .into_iter()
                    .find(|e| e.nonce == nonce);
                let pending = receipt
                    .events::<ISessionWallet::PaymentPending>(wallet)
                    .into_iter()
                    .find(|e| e.nonce == nonce);
                match (executed, pending) {
                    (Some(e), _) => Outcome::new("executed").receipt(e.receiptId),
                    (None, Some(e)) => Outcome::new("pending").pending(e.pendingId),
                    (None, None) => Outcome::new("reverted").error(no_event()),
                }
            }
            Mined::Reverted(error) | Mined::Failed(error) => Outcome::new("reverted").error(error),
        };
        record_payment(app, p.clone(), outcome).await?;
    }
    Ok(unsettled.len())
}

async fn decisions(app: &App) -> Result<usize, OutcomeError> {
    let decided = app.store.decided_payments().await?;
    for (payment, pending_id, tx_id) in &decided {
        let tx = transaction(app, *tx_id).await?;
        let wallet = app.contracts.wallet;
        let outcome = match mined(app, &tx).await? {
            Mined::Succeeded(receipt) => {
                let approved = receipt
                    .events::<ISessionWallet::PaymentApproved>(wallet)
                    .iter()
                    .any(|e| e.pendingId.to_string() == *pending_id);
                let executed = receipt.events::<ISessionWallet::PaymentExecuted>(wallet);
                match executed.first() {
                    Some(e) if approved => Outcome::new("approved").receipt(e.receiptId),
                    _ => Outcome::new("rejected"),
                }
            }
            // The decision did not land; the payment stays pending (it may be decided again
            // or expire), with the reason kept.
            Mined::Reverted(error) | Mined::Failed(error) => Outcome::new("pending").error(error),
        };
        let undecided = outcome.outcome == "pending";
        if let Some(row) = app.store.payment(payment, None).await? {
            record_payment(app, row, outcome).await?;
        }
        if undecided {
            app.store.clear_payment_decision(payment).await?;
        }
    }
    Ok(decided.len())
}

/// What a payment's (or its decision's) receipt said.
struct Outcome {
    outcome: &'static str,
    receipt_id: Option<String>,
    pending_id: Option<String>,
    error: Option<(String, Value)>,
}

impl Outcome {
    fn new(outcome: &'static str) -> Self {
        Outcome {
            outcome,
            receipt_id: None,
            pending_id: None,
            error: None,
        }
    }
    fn receipt(self, id: U256) -> Self {
        Outcome {
            receipt_id: Some(id.to_string()),
            ..self
        }
    }
    fn pending(self, id: U256) -> Self {
        Outcome {
            pending_id: Some(id.to_string()),
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

/// Announces and records a payment's outcome.
async fn record_payment(app: &App, mut p: PaymentRow, o: Outcome) -> Result<(), OutcomeError> {
    let error = o.error.map(|(code, details)| (code, details.to_string()));
    p.outcome = Some(o.outcome.to_owned());
    p.receipt_id = o.receipt_id.clone().or(p.receipt_id);
    p.pending_id = o.pending_id.clone().or(p.pending_id);
    p.error_code = error.as_ref().map(|e| e.0.clone());
    p.error_details = error.as_ref().map(|e| e.1.clone());
    if let Some(host) = app.store.session_host(&p.session_id).await? {
        let state = format!("{}:{}", o.outcome, p.error_code.as_deref().unwrap_or(""));
        let view = serde_json::to_value(PaymentView::of(app, p.clone())).unwrap_or(Value::Null);
        webhooks::emit(app, &host, "payment.updated", &p.id, &state, view).await?;
    }
    app.store
        .set_payment_outcome(
            &p.id,
            o.outcome,
            o.receipt_id.as_deref(),
            o.pending_id.as_deref(),
            error.as_ref().map(|(c, d)| (c.as_str(), d.as_str())),
        )
        .await?;
    tracing::info!(payment = %p.id, outcome = o.outcome, "payment settled");
    Ok(())
}

/// Revocations and closes the relayer sent: announced once mined (with the refund of a close).
async fn session_ends(app: &App, which: SessionTx) -> Result<usize, OutcomeError> {
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

async fn provenance(app: &App) -> Result<usize, OutcomeError> {
    let unsettled = app.store.unsettled_provenance(256).await?;
    for p in &unsettled {
        let tx = transaction(app, p.transaction_id).await?;
        let (outcome, record_id, error) = match mined(app, &tx).await? {
            Mined::Succeeded(receipt) => {
                match receipt
                    .events::<IReceiptRegistry::ProvenanceRecorded>(app.contracts.receipts)
                    .first()
                {
                    Some(e) => ("recorded", Some(e.recordId.to_string()), None),
                    None => ("reverted", None, Some(no_event())),
                }
            }
            Mined::Reverted(error) | Mined::Failed(error) => ("reverted", None, Some(error)),
        };
        let error = error.map(|(code, details)| (code, details.to_string()));
        if let Some(host) = app.store.session_host(&p.session_id).await? {
            let data = json!({
                "id": p.id,
                "sessionId": p.session_id,
                "status": if outcome == "recorded" { "recorded" } else { "failed" },
                "recordId": record_id,
                "error": error.as_ref().map(|e| e.0.clone()),
            });
            webhooks::emit(app, &host, "provenance.updated", &p.id, outcome, data).await?;
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

fn no_event() -> (String, Value) {
    ("NoEvent".into(), serde_json::json!({}))
}

enum Mined {
    Succeeded(bursar_client::rpc::Receipt),
    /// Mined and reverted: the contract error's name and arguments.
    Reverted((String, Value)),
    /// Never mined (its nonce went to another transaction).
    Failed((String, Value)),
}

async fn transaction(app: &App, id: i64) -> Result<TxRow, OutcomeError> {
    app.store
        .transaction(id)
        .await?
        .ok_or_else(|| StoreError::Corrupt(format!("transaction {id} is gone")).into())
}

async fn mined(app: &App, tx: &TxRow) -> Result<Mined, OutcomeError> {
    let corrupt = |what: &str| StoreError::Corrupt(format!("transaction {}: {what}", tx.id));
    let Some(hash) = tx.mined_hash.as_deref() else {
        let reason = tx.last_error.clone().unwrap_or_default();
        return Ok(Mined::Failed((
            "TransactionFailed".into(),
            serde_json::json!({ "reason": reason }),
        )));
    };
    let hash: B256 = hash.parse().map_err(|_| corrupt("hash"))?;
    if tx.receipt_status == Some(1) {
        let receipt = app
            .client
            .receipt(hash)
            .await?
            .ok_or_else(|| corrupt("receipt gone"))?;
        return Ok(Mined::Succeeded(receipt));
    }
    let from: Address = tx.signer.parse().map_err(|_| corrupt("signer"))?;
    let to: Address = tx.to.parse().map_err(|_| corrupt("to"))?;
    let data: Bytes = tx.data.parse().map_err(|_| corrupt("data"))?;
    let block = tx.block_number.unwrap_or_default() as u64;
    let reason = app.client.revert_reason(from, to, &data, block).await?;
    Ok(Mined::Reverted(
        match reason.as_deref().and_then(|r| decode_error(r)) {
            Some(e) => (e.name, Value::Object(e.args)),
            None => ("Reverted".into(), serde_json::json!({})),
        },
    ))
}
