//! x402 `batch-settlement` channels paid from a session. The wallet is the channel's payer,
//! the session key its payer authorizer (it signs the vouchers, which the escrow checks by
//! ECDSA), the session's token its token and the session id its salt: one channel per
//! session, receiver, receiver authorizer and withdraw delay.
//!
//! * `reserveDeposit` admits a deposit under every rule a `pay` is checked by — the receiver
//!   on the allowlist, the per-payment cap, the deposit left, the period budget, co-sign above
//!   the threshold — counts it as spent and records its receipt, like `reserve`. What it
//!   reserves is the EIP-3009 `receiveWithAuthorization` x402's ERC-3009 collector takes (to
//!   the collector, nonce `keccak256(channelId, salt)`, the salt derived from what the deposit
//!   says as `reserve`'s nonce is), and `isValidSignature` vouches for it while it is live.
//!   The withdraw delay must end before the session does, so the payer's way out fits in it.
//! * Vouchers are not on chain until the receiver claims them: the channel's deposits bound
//!   what they can take, and the relayer signs one only within the session's rules.
//! * `confirmDeposit` counts a reserved deposit the token says it used as in its channel
//!   (`releaseDeposit` gives back one that was never used, as `release`).
//! * `creditChannel` credits the session with what the channel returned: refunds and
//!   withdrawals pay the payer (this wallet), so what came back is the confirmed deposits less
//!   what the escrow still holds for the channel — never more than what left for it. It is
//!   taken off `spent` once (refunded to the owner of a closed session).
//! * `withdrawChannel` is the payer's way out when the receiver does not refund: the owner or
//!   guardian at any time, anyone once the session can no longer pay, starts the escrow's
//!   withdrawal of what is unclaimed, then finalizes it after the delay.
//!
//! The escrow invariant stays as `reservation` states it: a deposit is spent when reserved
//! and leaves through the token; what comes back is credited only once it has arrived.

use alloc::vec::Vec;

use alloy_primitives::{keccak256, Address, B256, U128, U256, U64};
use alloy_sol_types::{SolCall, SolEvent};
use bursar_bindings::{
    wallet::{ISessionWallet::*, InvalidParameter, SessionStatus},
    x402::{self, IX402BatchSettlement},
};
use bursar_contract_common::{
    call, calldata,
    eip712::{hash_words, typed_data_hash, Word, DOMAIN_TYPEHASH},
    event::emit,
    word,
};
use stylus_sdk::{prelude::*, storage::*};

use crate::{call_failed, session, Result, SessionWallet, WalletError};

/// What the wallet knows of one of its channels.
#[storage]
pub struct Channel {
    /// Deposits the token confirmed it made into the channel.
    pub deposited: StorageU128,
    /// What came back from it and was credited to its session.
    pub credited: StorageU128,
}

/// A channel of a session, as the wallet's functions name it (the rest of its config is the
/// session's).
pub(crate) struct Terms {
    pub(crate) session_id: U256,
    pub(crate) receiver: Address,
    pub(crate) receiver_authorizer: Address,
    pub(crate) withdraw_delay: u64,
}

/// A deposit into a channel, as `reserveDeposit` is given it.
pub(crate) struct Deposit {
    pub(crate) channel: Terms,
    pub(crate) value: U256,
    pub(crate) valid_before: U256,
    pub(crate) purpose: B256,
}

impl SessionWallet {
    /// The channel's config as the escrow's ABI encodes it (seven static words).
    fn channel_config(&self, t: &Terms) -> [Word; 7] {
        let s = self.sessions.getter(t.session_id);
        [
            word(self.vm().contract_address()),
            word(s.session_key.get()),
            word(t.receiver),
            word(t.receiver_authorizer),
            word(s.token.get()),
            word(t.withdraw_delay),
            word(t.session_id),
        ]
    }

    /// The channel's id: the EIP-712 hash of its config under the escrow's domain.
    fn channel_id(&self, config: &[Word; 7]) -> B256 {
        let domain = hash_words(&[
            word(DOMAIN_TYPEHASH),
            word(x402::DOMAIN_NAME_HASH),
            word(x402::DOMAIN_VERSION_HASH),
            word(self.vm().chain_id()),
            word(x402::BATCH_SETTLEMENT),
        ]);
        let mut fields = [[0u8; 32]; 8];
        fields[0] = word(x402::CHANNEL_CONFIG_TYPEHASH);
        fields[1..].copy_from_slice(config);
        typed_data_hash(domain, hash_words(&fields))
    }

    /// A deposit's channel id, EIP-3009 nonce and digest: `receiveWithAuthorization` to the
    /// collector.
    fn deposit_authorization(&self, d: &Deposit) -> Result<(B256, B256, B256)> {
        let (t, value, valid_before, purpose) = (&d.channel, d.value, d.valid_before, d.purpose);
        let config = self.channel_config(t);
        let id = self.channel_id(&config);
        let salt = crate::reservation::authorization_nonce(
            t.session_id,
            t.receiver,
            value,
            U256::ZERO,
            valid_before,
            purpose,
        );
        let nonce = keccak256([id.0, salt.0].as_flattened());
        let token = self.sessions.getter(t.session_id).token.get();
        let digest = self.authorization_digest(
            token,
            x402::RECEIVE_WITH_AUTHORIZATION_TYPEHASH,
            x402::ERC3009_DEPOSIT_COLLECTOR,
            value,
            U256::ZERO,
            valid_before,
            nonce,
        )?;
        Ok((id, nonce, digest))
    }

    /// `reserveDeposit`, with the signature borrowed.
    pub(crate) fn reserve_deposit_signed(
        &mut self,
        d: &Deposit,
        signature: &[u8],
    ) -> Result<(bool, U256)> {
        let now = self.vm().block_timestamp();
        let session_id = d.channel.session_id;
        let (token, session_end) = {
            let s = self.sessions.getter(session_id);
            (s.token.get(), s.expires_at.get().to::<u64>())
        };
        let before = d.valid_before.saturating_to::<u64>();
        if token == bursar_contract_common::token::NATIVE
            || before <= now
            || d.valid_before > U256::from(session_end)
        {
            self.sessions.getter(session_id).ensure_open(session_id)?;
            return Err(WalletError::invalid(InvalidParameter::Authorization));
        }
        let delay = d.channel.withdraw_delay;
        if !x402::WITHDRAW_DELAY_RANGE.contains(&delay) || now.saturating_add(delay) > session_end {
            return Err(WalletError::invalid(InvalidParameter::Channel));
        }
        let (_, nonce, digest) = self.deposit_authorization(d)?;
        let to = d.channel.receiver;
        self.reserve_digest(
            session_id, to, d.value, before, d.purpose, nonce, digest, signature,
        )
    }

    /// `confirmDeposit`.
    pub(crate) fn confirm_channel_deposit(&mut self, d: &Deposit) -> Result<U256> {
        let session_id = d.channel.session_id;
        let (id, nonce, digest) = self.deposit_authorization(d)?;
        let (amount, live_until, receipt) = {
            let r = self.reservations.getter(digest);
            (r.amount.get(), r.valid_before.get(), r.receipt.get())
        };
        // Confirmed already (its window set to zero), released, or never reserved.
        if amount == U128::ZERO || live_until == U64::ZERO || receipt == U64::ZERO {
            return Err(WalletUnknownReservation { digest }.into());
        }
        let token = self.sessions.getter(session_id).token.get();
        if !self.authorization_used(token, nonce)? {
            return Err(WalletReservationLive {
                digest,
                validBefore: live_until.to(),
            }
            .into());
        }
        // Used: no longer vouched for, never releasable (the token says it was used).
        self.reservations.setter(digest).valid_before.set(U64::ZERO);
        let deposited = {
            let mut c = self.channels.setter(id);
            let total = c.deposited.get().saturating_add(amount);
            c.deposited.set(total);
            session::widen(total)
        };
        emit(
            self.vm(),
            DepositConfirmed::SIGNATURE_HASH,
            &[word(session_id), word(id)],
            &[word(session::widen(amount)), word(deposited)],
        );
        Ok(deposited)
    }

    /// `releaseDeposit`.
    pub(crate) fn release_channel_deposit(&mut self, d: &Deposit) -> Result<U256> {
        let (_, nonce, digest) = self.deposit_authorization(d)?;
        self.release_digest(d.channel.session_id, d.channel.receiver, nonce, digest)
    }

    /// The escrow's `(balance, totalClaimed)` of a channel.
    fn escrow_channel(&self, id: B256) -> Result<(U256, U256)> {
        let data = calldata::encode(IX402BatchSettlement::channelsCall::SELECTOR, &[word(id)]);
        let out = call::view(self.vm(), x402::BATCH_SETTLEMENT, &data)
            .ok_or_else(|| call_failed(x402::BATCH_SETTLEMENT, Vec::new()))?;
        let word_at = |i: usize| out.get(32 * i..32 * i + 32).map(U256::from_be_slice);
        match (word_at(0), word_at(1)) {
            (Some(balance), Some(claimed)) => Ok((balance, claimed)),
            _ => Err(call_failed(x402::BATCH_SETTLEMENT, out)),
        }
    }

    /// `creditChannel`.
    pub(crate) fn credit_channel_returns(&mut self, t: &Terms) -> Result<U256> {
        let session_id = t.session_id;
        let id = self.channel_id(&self.channel_config(t));
        let (balance, _) = self.escrow_channel(id)?;
        let (deposited, credited) = {
            let c = self.channels.getter(id);
            (
                session::widen(c.deposited.get()),
                session::widen(c.credited.get()),
            )
        };
        // Everything confirmed that the escrow no longer holds came back to this wallet; an
        // unconfirmed deposit only makes the balance larger, so this never overcounts.
        let returned = deposited.saturating_sub(balance);
        let amount = returned.saturating_sub(credited);
        if amount.is_zero() {
            return Ok(U256::ZERO);
        }
        self.channels
            .setter(id)
            .credited
            .set(session::narrow(credited + amount));
        let (closed, owner, token) = {
            let mut s = self.sessions.setter(session_id);
            let spent = s.amount(&s.spent).saturating_sub(amount);
            s.spent.set(session::narrow(spent));
            (
                s.status() == SessionStatus::Closed as u8,
                s.owner.get(),
                s.token.get(),
            )
        };
        emit(
            self.vm(),
            ChannelCredited::SIGNATURE_HASH,
            &[word(session_id), word(id)],
            &[word(amount), word(credited + amount)],
        );
        if closed {
            self.refund(session_id, owner, token, amount);
        }
        Ok(amount)
    }

    /// `withdrawChannel`.
    pub(crate) fn withdraw_from_channel(&mut self, t: &Terms) -> Result<()> {
        let session_id = t.session_id;
        let now = self.vm().block_timestamp();
        let caller = self.vm().msg_sender();
        {
            let s = self.sessions.getter(session_id);
            if s.status() == SessionStatus::None as u8 {
                return Err(WalletUnknownSession {
                    sessionId: session_id,
                }
                .into());
            }
            let decides = caller == s.owner.get() || caller == s.guardian.get();
            if !decides && s.ensure_live(session_id, now, false).is_ok() {
                return Err(WalletUnauthorized { caller }.into());
            }
        }
        let config = self.channel_config(t);
        let id = self.channel_id(&config);
        let pending = {
            let data = calldata::encode(
                IX402BatchSettlement::pendingWithdrawalsCall::SELECTOR,
                &[word(id)],
            );
            call::view(self.vm(), x402::BATCH_SETTLEMENT, &data)
                .and_then(|out| out.get(32..64).map(U256::from_be_slice))
                .ok_or_else(|| call_failed(x402::BATCH_SETTLEMENT, Vec::new()))?
        };
        let data = if pending.is_zero() {
            let (balance, claimed) = self.escrow_channel(id)?;
            let unclaimed = balance.saturating_sub(claimed);
            if unclaimed.is_zero() {
                return Err(WalletError::invalid(InvalidParameter::Channel));
            }
            let mut args = Vec::from(config);
            args.push(word(unclaimed));
            calldata::encode(IX402BatchSettlement::initiateWithdrawCall::SELECTOR, &args)
        } else {
            calldata::encode(
                IX402BatchSettlement::finalizeWithdrawCall::SELECTOR,
                &config,
            )
        };
        call::call(self.vm(), x402::BATCH_SETTLEMENT, &data)
            .map_err(|reason| call_failed(x402::BATCH_SETTLEMENT, reason))?;
        Ok(())
    }

    /// `channel`: `(deposited, credited)` of a channel id.
    pub(crate) fn channel_totals(&self, id: B256) -> (U256, U256) {
        let c = self.channels.getter(id);
        (
            session::widen(c.deposited.get()),
            session::widen(c.credited.get()),
        )
    }
}
