//! What mined transactions did, read from their receipts: a session's open succeeded or not, a
//! payment executed (its receipt id) or went pending (its pending id), a provenance record got
//! its id — or the decoded contract error a transaction reverted with (the call replayed on its
//! block's parent state). Runs after every engine pass that changed something.

use alloy_primitives::{Address, Bytes, B256, U256};
use bursar_bindings::receipts::IReceiptRegistry;
use bursar_bindings::wallet::ISessionWallet;
use bursar_client::revert::decode_error;
use serde_json::Value;

use crate::store::{StoreError, TxRow};
use crate::Core;

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

/// Settles outcomes after each engine pass until `stop` resolves.
pub async fn run(core: &Core, stop: impl std::future::Future<Output = ()>) {
    tokio::pin!(stop);
    let mut changes = core.engine.changes();
    loop {
        match settle(core).await {
            Ok(0) => {}
            Ok(_) => {
                core.settled.send_modify(|n| *n += 1);
            }
            Err(e) => tracing::warn!(error = %e, "reading outcomes failed; retrying"),
        }
        tokio::select! {
            _ = &mut stop => return,
            _ = changes.changed() => {}
            _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
        }
    }
}

/// One pass: returns how many outcomes it recorded.
pub async fn settle(core: &Core) -> Result<usize, OutcomeError> {
    let mut n = 0;
    for (id, tx_status, receipt_status) in core.store.opened_sessions().await? {
        let opened = tx_status != "failed" && receipt_status == Some(1);
        let status = if opened { "open" } else { "failed" };
        core.store.set_session_status(&id, status).await?;
        tracing::info!(session = %id, status, "session open settled");
        n += 1;
    }
    for p in core.store.unsettled_payments(256).await? {
        let tx = transaction(core, p.transaction_id).await?;
        let (outcome, receipt_id, pending_id, error) = match mined(core, &tx).await? {
            Mined::Succeeded(receipt) => {
                let nonce: U256 = p.intent_nonce.parse().unwrap_or_default();
                let wallet = core.contracts.wallet;
                let executed = receipt
                    .events::<ISessionWallet::PaymentExecuted>(wallet)
                    .into_iter()
                    .find(|e| e.nonce == nonce);
                let pending = receipt
                    .events::<ISessionWallet::PaymentPending>(wallet)
                    .into_iter()
                    .find(|e| e.nonce == nonce);
                match (executed, pending) {
                    (Some(e), _) => ("executed", Some(e.receiptId.to_string()), None, None),
                    (None, Some(e)) => ("pending", None, Some(e.pendingId.to_string()), None),
                    (None, None) => ("reverted", None, None, Some(no_event())),
                }
            }
            Mined::Reverted(error) | Mined::Failed(error) => ("reverted", None, None, Some(error)),
        };
        let error = error.map(|(code, details)| (code, details.to_string()));
        core.store
            .set_payment_outcome(
                &p.id,
                outcome,
                receipt_id.as_deref(),
                pending_id.as_deref(),
                error.as_ref().map(|(c, d)| (c.as_str(), d.as_str())),
            )
            .await?;
        tracing::info!(payment = %p.id, outcome, "payment settled");
        n += 1;
    }
    for (payment, pending_id, tx_id) in core.store.decided_payments().await? {
        let tx = transaction(core, tx_id).await?;
        let wallet = core.contracts.wallet;
        let (outcome, receipt_id, error) = match mined(core, &tx).await? {
            Mined::Succeeded(receipt) => {
                let approved = receipt
                    .events::<ISessionWallet::PaymentApproved>(wallet)
                    .iter()
                    .any(|e| e.pendingId.to_string() == pending_id);
                if approved {
                    let executed = receipt.events::<ISessionWallet::PaymentExecuted>(wallet);
                    let receipt_id = executed.first().map(|e| e.receiptId.to_string());
                    ("approved", receipt_id, None)
                } else {
                    ("rejected", None, None)
                }
            }
            // The decision did not land; the payment stays pending (it may be decided again
            // or expire), with the reason kept.
            Mined::Reverted(error) | Mined::Failed(error) => ("pending", None, Some(error)),
        };
        let error = error.map(|(code, details)| (code, details.to_string()));
        core.store
            .set_payment_outcome(
                &payment,
                outcome,
                receipt_id.as_deref(),
                None,
                error.as_ref().map(|(c, d)| (c.as_str(), d.as_str())),
            )
            .await?;
        if outcome == "pending" {
            core.store.clear_payment_decision(&payment).await?;
        }
        tracing::info!(%payment, outcome, "decision settled");
        n += 1;
    }
    for p in core.store.unsettled_provenance(256).await? {
        let tx = transaction(core, p.transaction_id).await?;
        let (outcome, record_id, error) = match mined(core, &tx).await? {
            Mined::Succeeded(receipt) => {
                match receipt
                    .events::<IReceiptRegistry::ProvenanceRecorded>(core.contracts.receipts)
                    .first()
                {
                    Some(e) => ("recorded", Some(e.recordId.to_string()), None),
                    None => ("reverted", None, Some(no_event())),
                }
            }
            Mined::Reverted(error) | Mined::Failed(error) => ("reverted", None, Some(error)),
        };
        let error = error.map(|(code, details)| (code, details.to_string()));
        core.store
            .set_provenance_outcome(
                &p.id,
                outcome,
                record_id.as_deref(),
                error.as_ref().map(|(c, d)| (c.as_str(), d.as_str())),
            )
            .await?;
        n += 1;
    }
    Ok(n)
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

async fn transaction(core: &Core, id: i64) -> Result<TxRow, OutcomeError> {
    core.store
        .transaction(id)
        .await?
        .ok_or_else(|| StoreError::Corrupt(format!("transaction {id} is gone")).into())
}

async fn mined(core: &Core, tx: &TxRow) -> Result<Mined, OutcomeError> {
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
        let receipt = core
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
    let reason = core.client.revert_reason(from, to, &data, block).await?;
    Ok(Mined::Reverted(
        match reason.as_deref().and_then(|r| decode_error(r)) {
            Some(e) => (e.name, Value::Object(e.args)),
            None => ("Reverted".into(), serde_json::json!({})),
        },
    ))
}
