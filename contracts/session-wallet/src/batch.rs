//! `payBatch`: many signed intents in one transaction, each checked and carried out on its own.
//!
//! Every intent goes through `pay`'s checks and effects (`take_intent`); a refused one emits
//! `PaymentFailed` with the error `pay` would have reverted with, and writes nothing else (its
//! nonce stays unused). The admitted ones are paid out with one transfer per (token, payee):
//! the batch's whole point is to pay the fixed costs of a payment once, and a transfer is the
//! largest of them after the receipt. Receipts stay per intent. When a group's transfer fails
//! (a payee the token blocks, a hostile token), every intent of the group is given back (spend
//! and nonce) and fails with `WalletTransferFailed` for its own amount; the others stand.
//!
//! A token or payee runs its code with at most [`TRANSFER_GAS`]: one hostile token, whose owner
//! chose it for their own session, cannot burn the gas every other session's intent needs.
//! The batch as a whole either runs to its end or reverts (out of gas, a registry failing), so
//! nothing is ever half-applied.

use alloc::vec::Vec;

use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::SolEvent;
use bursar_bindings::{
    eip712::PaymentIntent,
    wallet::{batch, ISessionWallet::*},
};
use bursar_contract_common::{calldata, nonce, token, word};
use stylus_sdk::prelude::*;

use crate::{session, InvalidParameter, Result, SessionWallet, Taken, WalletError};

/// Gas a token (or a native payee) may use for one transfer of a batch. USDC's `transfer`
/// through its proxy to a new holder costs about 45,000.
pub(crate) const TRANSFER_GAS: u64 = 200_000;

/// What the intents of one batch pay one payee in one token, and whether it was paid.
struct Transfer {
    token: Address,
    to: Address,
    total: U256,
    paid: bool,
}

impl SessionWallet {
    /// `payBatch`, with the records borrowed (the router's entry point). Returns how many
    /// intents were paid or held.
    ///
    /// # Errors
    /// * [`WalletInvalidParameter`]`(Batch)` — `packed` is empty or not whole records.
    /// * [`WalletCallFailed`] — the ReceiptRegistry failed (the whole batch reverts: a payment
    ///   already transferred cannot go without its receipt).
    pub(crate) fn pay_packed(&mut self, packed: &[u8]) -> Result<U256> {
        let records =
            batch::records(packed).ok_or(WalletError::invalid(InvalidParameter::Batch))?;
        let now = self.vm().block_timestamp();
        let mut transfers: Vec<Transfer> = Vec::new();
        // Intents counted as spent: (intent, session owner, index of its transfer).
        let mut spent = Vec::new();
        let mut done = 0u64;
        for record in records {
            let (intent, signature) = batch::read(record);
            match self.take_intent(&intent, signature, now) {
                Ok(Taken::Held(_)) => done += 1,
                Ok(Taken::Spent { owner, token }) => {
                    let at = transfers
                        .iter()
                        .position(|t| t.token == token && t.to == intent.to)
                        .unwrap_or_else(|| {
                            transfers.push(Transfer {
                                token,
                                to: intent.to,
                                total: U256::ZERO,
                                paid: false,
                            });
                            transfers.len() - 1
                        });
                    // Within the deposits the sessions escrow, so within `uint256`.
                    transfers[at].total += intent.amount;
                    spent.push((intent, owner, at));
                }
                Err(error) => self.failed(&intent, error),
            }
        }
        for t in &mut transfers {
            t.paid = token::send_with_gas(self.vm(), t.token, t.to, t.total, TRANSFER_GAS);
        }
        // Receipts and events in the intents' order.
        for (intent, owner, at) in spent {
            let t = &transfers[at];
            if t.paid {
                self.executed(&intent, owner, t.token)?;
                done += 1;
            } else {
                self.give_back(&intent);
                let error = WalletTransferFailed {
                    token: t.token,
                    to: t.to,
                    amount: intent.amount,
                };
                self.failed(&intent, error.into());
            }
        }
        Ok(U256::from(done))
    }

    /// Undoes `take_intent`'s spend of an intent not paid out: its amount leaves `spent` (and
    /// the period's spend, whose start the spend already moved to now) and its nonce is free.
    fn give_back(&mut self, i: &PaymentIntent) {
        let mut s = self.sessions.setter(i.session);
        if !s.period_seconds.get().is_zero() {
            let period_spent = s.amount(&s.period_spent).saturating_sub(i.amount);
            s.period_spent.set(session::narrow(period_spent));
        }
        let spent = s.amount(&s.spent).saturating_sub(i.amount);
        s.spent.set(session::narrow(spent));
        nonce::mark(&mut s.nonces, i.nonce, false);
    }

    /// Emits `PaymentFailed(sessionId, nonce, reason)` with the error's ABI encoding.
    fn failed(&mut self, i: &PaymentIntent, error: WalletError) {
        let reason: Vec<u8> = error.into();
        let data = calldata::with_bytes(&[word(i.nonce)], &reason);
        let topics = [PaymentFailed::SIGNATURE_HASH, B256::from(i.session)];
        // A log fails only in a static call, which could not have written anything anyway.
        let _ = self.vm().raw_log(&topics, &data);
    }
}
