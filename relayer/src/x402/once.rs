//! One payment, one `success`. A resource server serves once per successful settlement, so N
//! `POST /x402/settle` of one payment at once (a client retrying, N requests carrying one
//! `PAYMENT-SIGNATURE`, replicas behind a balancer) must hear `success` at most once between
//! them, in any number of relayer processes. Each settlement has a turn
//! ([`crate::store::SettlementTurn`]): the request holding it sends, or waits for what was
//! sent, and answers; the others hear `settlement_pending` meanwhile and, once it was answered,
//! that the payment was used.

use alloy_primitives::Address;

use super::types::{refuse, SettleResponse};
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
    pub(super) used: &'static str,
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
