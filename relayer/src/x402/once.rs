//! One payment, one `success`. A resource server serves once per successful settlement, so N
//! `POST /x402/settle` of one payment at once (a client retrying, N requests carrying one
//! `PAYMENT-SIGNATURE`, replicas behind a balancer) must hear `success` at most once between
//! them, in any number of relayer processes. Each settlement has a turn
//! ([`crate::store::SettlementTurn`]): the request holding it sends, or waits for what was
//! sent, and answers; the others hear `settlement_pending` meanwhile and, once it was answered,
//! that the payment was used.

use std::future::Future;

use alloy_primitives::{Address, B256, U256};

use super::types::{refuse, Refusal, SettleResponse};
use crate::engine::submission::Call;
use crate::kernel::{App, Error};
use crate::store::{now_ms, SettlementTurn};

/// What the request holding a settlement's turn does.
pub(super) enum Turn {
    /// Check the payment and send it.
    Send,
    /// Wait for what was sent (an engine transaction id, a relayer payment id).
    Wait(String),
}

/// A settlement's key, and the code x402 gives a payment settled before.
pub(super) struct Settlement<'a> {
    /// The scheme's key of the payment.
    pub(super) key: &'a str,
    /// What was asked (a hash of the payload).
    pub(super) request_hash: &'a str,
    /// x402's code for a payment used before (`invalid_exact_evm_nonce_already_used`).
    pub(super) used: &'a str,
    /// Whose payment it is.
    pub(super) payer: Address,
}

impl Settlement<'_> {
    /// This request's turn, or the answer when another request has it or had it.
    pub(super) async fn take(&self, app: &App) -> Result<Result<Turn, SettleResponse>, Error> {
        let now = now_ms();
        let dead_before = now - app.settings.instance_timeout.as_millis() as i64;
        let turn = app
            .store
            .claim_settlement(
                self.key,
                self.request_hash,
                &app.process.instance,
                now,
                dead_before,
            )
            .await?;
        let refused = |reason, message: String| {
            Ok(Err(SettleResponse::failed(
                app,
                refuse(reason, message),
                Some(self.payer),
            )))
        };
        match turn {
            SettlementTurn::Send => Ok(Ok(Turn::Send)),
            SettlementTurn::Wait(sent) => Ok(Ok(Turn::Wait(sent))),
            SettlementTurn::Busy => refused(
                "settlement_pending",
                "this payment is being settled by another request: settle again to hear".into(),
            ),
            SettlementTurn::Answered(hash) => refused(
                self.used,
                format!("this payment was settled in transaction {hash}"),
            ),
            SettlementTurn::Mismatch => refused(
                self.used,
                "this payment's nonce was settled with another signature".into(),
            ),
        }
    }

    /// Settles through one engine transaction: `send` (polled only if this request holds the
    /// turn) checks the payment and queues it, answering the transaction's id ([`queue`]); then
    /// `outcome` tells what it came to, answered once ([`Settlement::answer`]). A refusal from
    /// `send` means nothing was sent, and a later `settle` checks afresh.
    pub(super) async fn run<O, F>(
        &self,
        app: &App,
        send: impl Future<Output = Result<Result<i64, Refusal>, Error>>,
        outcome: O,
    ) -> Result<SettleResponse, Error>
    where
        O: FnOnce(i64) -> F,
        F: Future<Output = Result<SettleResponse, Error>>,
    {
        let tx = match self.take(app).await? {
            Err(answer) => return Ok(answer),
            Ok(Turn::Wait(sent)) => match sent.parse() {
                Ok(tx) => tx,
                // Not an engine transaction (an edited row): give the turn back, answer nothing.
                Err(_) => {
                    app.store
                        .leave_settlement(self.key, &app.process.instance)
                        .await?;
                    return Err(Error::Internal);
                }
            },
            Ok(Turn::Send) => match send.await {
                Ok(Ok(tx)) => tx,
                Ok(Err(refusal)) => {
                    self.forget(app).await?;
                    return Ok(SettleResponse::failed(app, refusal, Some(self.payer)));
                }
                Err(err) => {
                    self.forget(app).await?;
                    return Err(err);
                }
            },
        };
        match outcome(tx).await {
            Ok(answer) => self.answer(app, answer).await,
            Err(err) => {
                app.store
                    .leave_settlement(self.key, &app.process.instance)
                    .await?;
                Err(err)
            }
        }
    }

    /// Records what carries the settlement once sent (see [`crate::store::Store::settlement_sent`]).
    pub(super) async fn sent(&self, db: &mut crate::store::DbTx, sent: &str) -> Result<(), Error> {
        Ok(crate::store::Store::settlement_sent(db, self.key, sent).await?)
    }

    /// Gives the turn back without an outcome: nothing was sent, or the request failed.
    pub(super) async fn forget(&self, app: &App) -> Result<(), Error> {
        Ok(app
            .store
            .forget_settlement(self.key, &app.process.instance)
            .await?)
    }

    /// Answers `answer`, the outcome this request saw: a `success` only if this request still
    /// held the turn (and now it is used); a pending one gives the turn to the next `settle`;
    /// a failure forgets the settlement, so a later `settle` checks the chain afresh.
    pub(super) async fn answer(
        &self,
        app: &App,
        answer: SettleResponse,
    ) -> Result<SettleResponse, Error> {
        if answer.success {
            if app
                .store
                .answer_settlement(self.key, &app.process.instance, &answer.transaction)
                .await?
            {
                return Ok(answer);
            }
            let why = refuse(
                self.used,
                format!(
                    "this payment was settled in transaction {}",
                    answer.transaction
                ),
            );
            return Ok(SettleResponse::failed(app, why, Some(self.payer)));
        }
        if answer.error_reason.as_deref() == Some("settlement_pending") {
            app.store
                .leave_settlement(self.key, &app.process.instance)
                .await?;
        } else {
            self.forget(app).await?;
        }
        Ok(answer)
    }
}

/// Queues `data` to `to` from `signer` with the engine, recorded as `settlement`'s in the same
/// database transaction; answers the engine's transaction id.
pub(super) async fn queue(
    app: &App,
    settlement: &Settlement<'_>,
    signer: Address,
    to: Address,
    data: Vec<u8>,
) -> Result<i64, Error> {
    let call = Call {
        signer,
        to,
        gas_limit: app.gas_for(signer, to, &data).await?,
        data: data.into(),
        value: U256::ZERO,
    };
    let (mut db, tx) = app.queue(&call).await?;
    settlement.sent(&mut db, &tx.to_string()).await?;
    app.commit(db).await?;
    Ok(tx)
}

/// Engine transaction `tx` once mined, waiting as long as an open waits: its hash and whether
/// it succeeded; `settlement_pending` (for `payer`) while it is not mined.
pub(super) async fn mined(
    app: &App,
    tx: i64,
    payer: Option<Address>,
) -> Result<Result<(B256, bool), SettleResponse>, Error> {
    let row = app
        .wait_for(app.settings.open_wait, || async {
            let row = app.store.transaction(tx).await?;
            Ok(row.filter(|t| t.receipt_status.is_some()))
        })
        .await?;
    let Some(row) = row else {
        let why = refuse(
            "settlement_pending",
            format!("transaction {tx} is not mined yet: settle again to hear"),
        );
        return Ok(Err(SettleResponse::failed(app, why, payer)));
    };
    // A transaction with a receipt status was mined: it has a hash.
    let hash = row.mined_hash.ok_or(Error::Internal)?;
    Ok(Ok((hash, row.receipt_status == Some(1))))
}

/// The signer a payer's settlements go out from: the same one for the same payer, so its
/// payments are settled in order.
pub(super) fn signer_for(app: &App, payer: Address) -> Address {
    let signers = app.engine.signers();
    signers[usize::from(payer[19]) % signers.len()]
}
