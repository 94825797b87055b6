//! # SessionWallet
//!
//! A singleton escrow of *sessions*. An owner opens a session for one sandbox session: a deposit
//! (ERC-20 or native), a session key that signs EIP-712 payment intents, and a policy —
//! per-payment cap, refilling period budget, co-sign threshold, valid window, lease, counterparty
//! allowlist. Anyone (normally the relayer) submits intents; the wallet checks every rule, pays,
//! and has the ReceiptRegistry write a receipt. Sessions pay; they never make arbitrary calls.
//!
//! The ABI, events and errors are declared once in `bursar_bindings::wallet`.
#![cfg_attr(not(any(test, feature = "export-abi")), no_main)]
#![cfg_attr(not(any(test, feature = "export-abi")), no_std)]
// `#[public]` generates an undocumented `print_from_args` for `export-abi`; the lints run
// without that feature too (`cargo xtask test`), where every public item needs docs.
#![cfg_attr(feature = "export-abi", allow(missing_docs))]

#[macro_use]
extern crate alloc;

mod batch;
pub mod channel;
pub mod error;
pub mod pending;
pub mod reservation;
#[cfg(any(target_arch = "wasm32", test))]
pub mod router;
pub mod session;

use alloc::vec::Vec;

use alloy_primitives::{Address, FixedBytes, B256, U128, U256, U32, U64, U8};
use alloy_sol_types::{SolCall, SolEvent};
use bursar_bindings::{
    counterparty::ICounterpartyRegistry,
    eip712::{
        PaymentIntent, LEASE_RENEWAL_TYPEHASH, PAYMENT_INTENT_TYPEHASH, SESSION_WALLET_DOMAIN,
    },
    receipts::IReceiptRegistry,
    wallet::{ISessionWallet::*, PendingStatus, SessionStatus},
};
use bursar_contract_common::{
    call, calldata,
    eip712::{domain_separator, hash_words, typed_data_hash},
    event::emit,
    nonce, signature, token, word,
};
use stylus_sdk::{abi::Bytes, prelude::*, storage::*};

pub use error::{InvalidParameter, WalletError};
use pending::Pending;
pub use pending::PENDING_TTL;
use reservation::Reservation;
use session::{Session, Terms};

type Result<T, E = WalletError> = core::result::Result<T, E>;

/// What an admitted intent became (see `take_intent`).
pub(crate) enum Taken {
    /// Held for the owner's decision, under this pending id.
    Held(U256),
    /// Counted as spent by the session of `owner`, in `token`: to be paid out.
    Spent { owner: Address, token: Address },
}

/// The wallet's storage: its wiring, and every session and pending payment by id.
#[storage]
// On wasm32 the entry point is `router::route`; `#[public]` routes native tests.
#[cfg_attr(not(target_arch = "wasm32"), entrypoint)]
pub struct SessionWallet {
    counterparty_registry: StorageAddress,
    receipt_registry: StorageAddress,
    /// SessionGateway: may open sessions and decide pending payments for owners who signed.
    gateway: StorageAddress,
    /// The program the wallet delegates its other functions to (see `router`).
    extension: StorageAddress,
    pending_count: StorageU256,
    sessions: StorageMap<U256, Session>,
    pendings: StorageMap<U256, Pending>,
    /// Refunds `close` could not pay, by owner and token (see `claim`).
    claimable: StorageMap<Address, StorageMap<Address, StorageU256>>,
    /// EIP-3009 authorizations reserved for third parties to settle, by their digest under
    /// the token's domain (see `reserve`).
    reservations: StorageMap<B256, Reservation>,
    /// x402 `batch-settlement` channels the sessions pay into, by channel id (see `channel`).
    channels: StorageMap<B256, channel::Channel>,
}

#[public]
impl SessionWallet {
    /// Wires the wallet to its registries, its gateway and its extension (deployed through
    /// StylusDeployer). Each registry and the gateway is then bound to this wallet by its binder
    /// (`bind(wallet)`), which it accepts only because this wallet names it here; the
    /// extension is code the wallet runs on its own storage. The wiring is fixed for good.
    ///
    /// # Errors
    /// * [`WalletInvalidParameter`]`(Registry)` — an address is zero.
    #[constructor]
    pub fn constructor(
        &mut self,
        counterparty_registry: Address,
        receipt_registry: Address,
        gateway: Address,
        extension: Address,
    ) -> Result<()> {
        if counterparty_registry.is_zero()
            || receipt_registry.is_zero()
            || gateway.is_zero()
            || extension.is_zero()
        {
            return Err(WalletError::invalid(InvalidParameter::Registry));
        }
        self.counterparty_registry.set(counterparty_registry);
        self.receipt_registry.set(receipt_registry);
        self.gateway.set(gateway);
        self.extension.set(extension);
        Ok(())
    }

    /// Opens a session owned by `owner` and escrows `deposit`: `msg.value` for the native
    /// currency (`token == 0`), otherwise pulled from `owner` with `transferFrom` (approve or
    /// permit first). The caller is the owner, or SessionGateway acting on the owner's signed
    /// `OpenSession`. Returns the new session's id, [`Self::session_id`]`(owner, nonce)`.
    ///
    /// The session is recorded before the deposit is pulled (checks-effects-interactions), and
    /// the deposit counts only if the wallet's balance grew by exactly `deposit`.
    ///
    /// # Errors
    /// * [`WalletUnauthorized`] — the caller is neither `owner` nor the gateway.
    /// * [`WalletNonceUsed`] — `owner` opened a session with `nonce` before.
    /// * [`WalletInvalidParameter`] — zero owner, session key or deposit, `expiresAt` not in the
    ///   future or not after `validAfter`, a period budget without a period length or vice
    ///   versa, an amount above `uint128` or a list id above `uint64` (`OutOfRange`).
    /// * [`WalletValueMismatch`] — `msg.value` differs from `deposit` (native) or is non-zero
    ///   (ERC-20).
    /// * [`WalletTokenWithoutCode`] — `token` is not a contract (yet).
    /// * [`WalletTransferFailed`] — the token refused `transferFrom` or `balanceOf`.
    /// * [`WalletTransferShortfall`] — the token delivered another amount (fee-on-transfer).
    ///
    /// # Events
    /// [`SessionOpened`].
    #[payable]
    #[allow(clippy::too_many_arguments)]
    pub fn open_session(
        &mut self,
        owner: Address,
        session_key: Address,
        guardian: Address,
        token: Address,
        deposit: U256,
        per_payment_cap: U256,
        period_budget: U256,
        period_seconds: u64,
        co_sign_threshold: U256,
        valid_after: u64,
        expires_at: u64,
        lease_seconds: u64,
        lease_keeper: Address,
        allowlist_id: U256,
        metadata: B256,
        nonce: U256,
    ) -> Result<U256> {
        let caller = self.vm().msg_sender();
        if caller != owner && caller != self.gateway.get() {
            return Err(WalletUnauthorized { caller }.into());
        }
        if owner.is_zero() {
            return Err(WalletError::invalid(InvalidParameter::Owner));
        }
        let terms = Terms {
            session_key,
            guardian,
            token,
            deposit,
            per_payment_cap,
            period_budget,
            period_seconds,
            co_sign_threshold,
            valid_after,
            expires_at,
            lease_seconds,
            lease_keeper,
            allowlist_id,
            metadata,
        };
        let value = self.vm().msg_value();
        self.open(owner, nonce, &terms, value)
    }

    /// Executes a `PaymentIntent` signed by the session key, submitted by anyone. Above the
    /// co-sign threshold the payment is held and waits for the owner instead.
    /// Returns `(true, receiptId)` when paid, `(false, pendingId)` when pending.
    ///
    /// # Errors
    /// * [`WalletDeadlinePassed`], [`WalletInvalidSignature`], [`WalletWrongSigner`],
    ///   [`WalletNonceUsed`].
    /// * [`WalletUnknownSession`], [`WalletSessionRevoked`], [`WalletSessionClosed`],
    ///   [`WalletSessionNotYetValid`], [`WalletSessionExpired`], [`WalletLeaseLapsed`].
    /// * [`WalletInvalidParameter`]`(Amount)` — zero amount.
    /// * [`WalletInvalidPayee`] — `to` is zero, this wallet, its gateway or a registry: money
    ///   sent there would count as spent yet stay in (or be lost to) the escrow.
    /// * [`WalletPaymentCapExceeded`], [`WalletInsufficientDeposit`],
    ///   [`WalletCounterpartyNotAllowed`], [`WalletPeriodBudgetExceeded`].
    /// * [`WalletTransferFailed`], [`WalletCallFailed`] (a registry failed).
    ///
    /// # Events
    /// [`PaymentExecuted`] (and the registry's `ReceiptRecorded`), or [`PaymentPending`].
    #[allow(clippy::too_many_arguments)]
    pub fn pay(
        &mut self,
        session_id: U256,
        to: Address,
        amount: U256,
        purpose: B256,
        nonce: U256,
        deadline: U256,
        signature: Bytes,
    ) -> Result<(bool, U256)> {
        self.pay_signed(session_id, to, amount, purpose, nonce, deadline, &signature)
    }

    /// Carries out many signed intents, of any sessions and tokens, in one transaction:
    /// `intents` is their packed records (`bursar_bindings::wallet::batch`). Each is checked by
    /// `pay`'s rules and has `pay`'s effects, receipt and events; a refused one emits
    /// [`PaymentFailed`] with the error `pay` would revert with, and leaves its nonce unused.
    /// What the admitted intents pay one payee in one token moves in one transfer; when it
    /// fails, each of them fails with [`WalletTransferFailed`] and is given back. Returns how
    /// many intents were paid or held.
    ///
    /// # Errors
    /// * [`WalletInvalidParameter`]`(Batch)` — `intents` is empty or not whole records.
    /// * [`WalletCallFailed`] — the ReceiptRegistry failed.
    ///
    /// # Events
    /// Per intent, as `pay`: [`PaymentExecuted`] (and the registry's `ReceiptRecorded`),
    /// [`PaymentPending`], or [`PaymentFailed`].
    pub fn pay_batch(&mut self, intents: Bytes) -> Result<U256> {
        self.pay_packed(&intents)
    }

    /// The owner approves a pending payment: it is executed now, against the current period
    /// budget and allowlist. Returns the receipt id.
    ///
    /// # Errors
    /// * `WalletUnknownPending`, `WalletPendingResolved`, `WalletPendingExpired`.
    /// * `WalletUnauthorized` — the caller is not the session owner.
    /// * Session state and policy errors as in `pay`.
    ///
    /// # Events
    /// `PaymentApproved`, then `PaymentExecuted`.
    pub fn approve_pending(&mut self, pending_id: U256) -> Result<U256> {
        let caller = self.vm().msg_sender();
        self.decide(pending_id, true, caller)
            .map(Option::unwrap_or_default)
    }

    /// Rejects a pending payment and releases its reservation. The owner may reject at any
    /// time; anyone may clear a pending payment that has expired.
    ///
    /// # Errors
    /// * `WalletUnknownPending`, `WalletPendingResolved`, `WalletUnauthorized`.
    ///
    /// # Events
    /// `PaymentRejected`.
    pub fn reject_pending(&mut self, pending_id: U256) -> Result<()> {
        let caller = self.vm().msg_sender();
        self.decide(pending_id, false, caller).map(|_| ())
    }

    /// Approves or rejects a pending payment for `owner`, whose signature SessionGateway has
    /// verified. Returns the receipt id of an approval (0 for a rejection).
    ///
    /// # Errors
    /// * `WalletUnauthorized` — the caller is not the gateway, or `owner` is not the session's.
    /// * As `approvePending` / `rejectPending`.
    ///
    /// # Events
    /// As `approvePending` / `rejectPending`.
    pub fn decide_pending_for(
        &mut self,
        pending_id: U256,
        approve: bool,
        owner: Address,
    ) -> Result<U256> {
        let caller = self.vm().msg_sender();
        if caller != self.gateway.get() {
            return Err(WalletUnauthorized { caller }.into());
        }
        self.decide(pending_id, approve, owner)
            .map(Option::unwrap_or_default)
    }

    /// Adds `amount` to a live session's deposit: `msg.value` for native sessions, otherwise
    /// pulled from the caller with `transferFrom`. Anyone may top up; refunds go to the owner.
    /// The deposit is raised before the tokens are pulled (checks-effects-interactions).
    ///
    /// # Errors
    /// * [`WalletInvalidParameter`]`(Amount)` — zero amount; `(OutOfRange)` — the deposit would
    ///   pass `uint128`.
    /// * Session state errors as in `pay` (a session that has not started may be topped up).
    /// * [`WalletValueMismatch`], [`WalletTokenWithoutCode`], [`WalletTransferFailed`],
    ///   [`WalletTransferShortfall`].
    ///
    /// # Events
    /// [`SessionToppedUp`].
    #[payable]
    pub fn top_up(&mut self, session_id: U256, amount: U256) -> Result<()> {
        let now = self.vm().block_timestamp();
        let from = self.vm().msg_sender();
        let value = self.vm().msg_value();
        if amount.is_zero() {
            return Err(WalletError::invalid(InvalidParameter::Amount));
        }
        let (token, deposit) = {
            let mut session = self.sessions.setter(session_id);
            session.ensure_live(session_id, now, false)?;
            let deposit = in_range(session.amount(&session.deposit).checked_add(amount))?;
            session.deposit.set(session::narrow(deposit));
            (session.token.get(), deposit)
        };
        emit(
            self.vm(),
            SessionToppedUp::SIGNATURE_HASH,
            &[word(session_id), word(from)],
            &[word(amount), word(deposit)],
        );
        self.receive_funds(token, from, amount, value)
    }

    /// Revokes a session at once: no further payment, approval or renewal. Callable by the
    /// owner, the guardian or the session key itself.
    ///
    /// # Errors
    /// * [`WalletUnknownSession`], [`WalletSessionRevoked`], [`WalletSessionClosed`].
    /// * [`WalletUnauthorized`].
    ///
    /// # Events
    /// [`SessionRevoked`].
    pub fn revoke(&mut self, session_id: U256) -> Result<()> {
        let caller = self.vm().msg_sender();
        let mut session = self.sessions.setter(session_id);
        session.ensure_open(session_id)?;
        let guardian = session.guardian.get();
        if caller != session.owner.get()
            && caller != session.session_key.get()
            && (guardian.is_zero() || caller != guardian)
        {
            return Err(WalletUnauthorized { caller }.into());
        }
        session.status.set(U8::from(SessionStatus::Revoked as u8));
        emit(
            self.vm(),
            SessionRevoked::SIGNATURE_HASH,
            &[word(session_id), word(caller)],
            &[],
        );
        Ok(())
    }

    /// Closes a session and refunds what was not spent to the owner. The owner may close at any
    /// time; anyone may close once the session is revoked, expired or its lease has lapsed.
    /// Pending payments die with the session. Returns the refund.
    ///
    /// Closing never depends on the owner accepting the refund: when the transfer fails (an
    /// owner contract that refuses ETH, a token that blocks the owner), the refund is credited
    /// to the owner's [`claimable`](Self::claimable) balance and `claim` pays it later.
    ///
    /// # Errors
    /// * [`WalletUnknownSession`], [`WalletSessionClosed`].
    /// * [`WalletSessionStillActive`] — a non-owner tried to close a live session.
    ///
    /// # Events
    /// [`SessionClosed`], preceded by [`RefundDeferred`] when the refund could not be paid.
    pub fn close(&mut self, session_id: U256) -> Result<U256> {
        let caller = self.vm().msg_sender();
        let now = self.vm().block_timestamp();
        let (owner, token, spent, refund) = {
            let mut session = self.sessions.setter(session_id);
            let status = session.status();
            if status != SessionStatus::Revoked as u8 {
                session.ensure_open(session_id)?;
            }
            let owner = session.owner.get();
            if caller != owner && !session.closable_by_anyone(now) {
                return Err(WalletSessionStillActive {
                    sessionId: session_id,
                }
                .into());
            }
            let spent = session.amount(&session.spent);
            let refund = session.amount(&session.deposit).saturating_sub(spent);
            session.status.set(U8::from(SessionStatus::Closed as u8));
            (owner, session.token.get(), spent, refund)
        };
        if !refund.is_zero() {
            self.refund(session_id, owner, token, refund);
        }
        emit(
            self.vm(),
            SessionClosed::SIGNATURE_HASH,
            &[word(session_id), word(caller)],
            &[word(spent), word(refund)],
        );
        Ok(refund)
    }

    /// Pays the caller's deferred refunds in `token` (see `close`) to `to`. Returns the amount.
    ///
    /// # Errors
    /// * [`WalletInvalidParameter`]`(Claim)` — nothing to claim, or `to` is zero.
    /// * [`WalletTransferFailed`] — the payment failed (nothing is lost: the call reverts).
    ///
    /// # Events
    /// [`RefundClaimed`].
    pub fn claim(&mut self, token: Address, to: Address) -> Result<U256> {
        let owner = self.vm().msg_sender();
        let amount = self.claimable.getter(owner).get(token);
        if amount.is_zero() || to.is_zero() {
            return Err(WalletError::invalid(InvalidParameter::Claim));
        }
        self.claimable.setter(owner).setter(token).set(U256::ZERO);
        emit(
            self.vm(),
            RefundClaimed::SIGNATURE_HASH,
            &[word(owner), word(token)],
            &[word(to), word(amount)],
        );
        self.send(token, to, amount)?;
        Ok(amount)
    }

    /// Extends a session's lease to `max(now, validAfter) + leaseSeconds`, never below the
    /// current expiry. Without a lease keeper the owner or the session key may call it directly
    /// (empty signature) and anyone may submit the session key's EIP-712 `LeaseRenewal`; with a
    /// keeper, the owner or the keeper may call it directly and only the keeper's signature
    /// counts, so that a sandbox holding its own session key cannot outlive its host. The keeper
    /// (or the owner) may revive a lapsed lease, as when a paused sandbox resumes (anyone may
    /// close the session while it is lapsed); without a keeper a lapse is final. Returns the new
    /// lease expiry.
    ///
    /// # Errors
    /// * Session state errors as in `pay` (including [`WalletLeaseLapsed`]).
    /// * [`WalletNoLease`] — the session has no lease.
    /// * [`WalletUnauthorized`] — no signature, from a caller who may not renew directly (the
    ///   session key, when the session has a keeper).
    /// * [`WalletDeadlinePassed`], [`WalletInvalidSignature`], [`WalletWrongSigner`],
    ///   [`WalletNonceUsed`].
    ///
    /// # Events
    /// [`LeaseRenewed`].
    pub fn renew_lease(
        &mut self,
        session_id: U256,
        nonce: U256,
        deadline: U256,
        signature: Bytes,
    ) -> Result<u64> {
        self.renew_signed(session_id, nonce, deadline, &signature)
    }

    /// The terms a session was opened with: `(owner, sessionKey, guardian, token,
    /// perPaymentCap, periodBudget, periodSeconds, coSignThreshold, validAfter, expiresAt,
    /// leaseSeconds, leaseKeeper, allowlistId)`. All zero for an unknown id. (The metadata is
    /// in `SessionOpened`.)
    #[allow(clippy::type_complexity)]
    pub fn session_terms(
        &self,
        session_id: U256,
    ) -> (
        Address,
        Address,
        Address,
        Address,
        U256,
        U256,
        u64,
        U256,
        u64,
        u64,
        u64,
        Address,
        U256,
    ) {
        let s = self.sessions.getter(session_id);
        (
            s.owner.get(),
            s.session_key.get(),
            s.guardian.get(),
            s.token.get(),
            s.amount(&s.per_payment_cap),
            s.amount(&s.period_budget),
            s.period_seconds.get().to(),
            s.amount(&s.co_sign_threshold),
            s.valid_after.get().to(),
            s.expires_at.get().to(),
            s.lease_seconds.get().to(),
            s.lease_keeper.get(),
            s.list_id(),
        )
    }

    /// A session's state now: `(status, deposit, spent, held, periodSpent, periodStart,
    /// leaseExpiresAt)`, with the period rolled forward to the current time (period spend is
    /// tracked only with a budget; the lease expiry is zero without a lease). Status is
    /// 0 unknown, 1 active, 2 revoked, 3 closed.
    pub fn session_state(&self, session_id: U256) -> (u8, U256, U256, U256, U256, u64, u64) {
        let now = self.vm().block_timestamp();
        let s = self.sessions.getter(session_id);
        let (period_start, period_spent) = s.current_period(now);
        (
            s.status(),
            s.amount(&s.deposit),
            s.amount(&s.spent),
            s.amount(&s.held),
            period_spent,
            period_start,
            s.lease_expires_at.get().to(),
        )
    }

    /// `(owner, sessionKey, active)`: who controls a session and whether it can act now (open,
    /// started, not expired, lease current). The ReceiptRegistry asks this for provenance.
    pub fn session_authority(&self, session_id: U256) -> (Address, Address, bool) {
        let now = self.vm().block_timestamp();
        let s = self.sessions.getter(session_id);
        (
            s.owner.get(),
            s.session_key.get(),
            s.ensure_live(session_id, now, true).is_ok(),
        )
    }

    /// Deposit neither spent nor held for pending payments (0 once closed).
    pub fn remaining_deposit(&self, session_id: U256) -> U256 {
        self.sessions.getter(session_id).available()
    }

    /// What may still be spent in the current period; `type(uint256).max` without a budget.
    pub fn remaining_period_budget(&self, session_id: U256) -> U256 {
        let now = self.vm().block_timestamp();
        self.sessions.getter(session_id).period_available(now)
    }

    /// A pending payment: `(sessionId, to, amount, purpose, nonce, expiresAt, status)`, status
    /// 0 unknown, 1 pending, 2 approved, 3 rejected.
    pub fn pending_payment(&self, pending_id: U256) -> (U256, Address, U256, B256, U256, u64, u8) {
        let p = self.pendings.getter(pending_id);
        (
            p.session_id.get(),
            p.to.get(),
            p.amount.get(),
            p.purpose.get(),
            p.nonce.get(),
            p.expires_at.get().to(),
            p.status.get().to(),
        )
    }

    /// Whether the session key has used `nonce`.
    pub fn is_nonce_used(&self, session_id: U256, nonce: U256) -> bool {
        nonce::is_used(&self.sessions.getter(session_id).nonces, nonce)
    }

    /// The EIP-712 domain separator ("Bursar Session Wallet", "1", chain id, this address).
    pub fn domain_separator(&self) -> B256 {
        domain_separator(
            self.vm(),
            SESSION_WALLET_DOMAIN.name_hash,
            SESSION_WALLET_DOMAIN.version_hash,
        )
    }

    /// The CounterpartyRegistry that holds the allowlists (fixed at construction).
    pub fn counterparty_registry(&self) -> Address {
        self.counterparty_registry.get()
    }

    /// The ReceiptRegistry that records every payment (fixed at construction).
    pub fn receipt_registry(&self) -> Address {
        self.receipt_registry.get()
    }

    /// The SessionGateway trusted to act on owners' signatures (fixed at construction).
    pub fn gateway(&self) -> Address {
        self.gateway.get()
    }

    /// The program the wallet delegates its other functions to (fixed at construction). It
    /// runs on the wallet's storage; called directly, it reverts.
    pub fn extension(&self) -> Address {
        self.extension.get()
    }

    /// The id of the session `owner` opens (or opened) with `nonce`.
    pub fn session_id(owner: Address, nonce: U256) -> U256 {
        bursar_bindings::wallet::session_id(owner, nonce)
    }

    /// Seconds a pending payment waits for the owner before it expires.
    pub fn pending_ttl() -> u64 {
        PENDING_TTL
    }

    /// Refunds owed to `owner` in `token` that `close` could not pay (see `claim`).
    pub fn claimable(&self, owner: Address, token: Address) -> U256 {
        self.claimable.getter(owner).get(token)
    }

    /// Reserves an EIP-3009 authorization of the session's token (USDC) for a third party to
    /// settle: `transferWithAuthorization(from = this wallet, to, value, validAfter,
    /// validBefore, nonce, signature)`, which is how an x402 `exact` facilitator takes a
    /// payment. The authorization's `nonce` is derived, not chosen:
    /// `keccak256(abi.encode(sessionId, to, value, validAfter, validBefore, purpose))`, so one
    /// nonce names one authorization (a settled one can never strand another that the token
    /// would refuse for its nonce) and the purpose is bound into what the token checks. The
    /// session key signs the authorization's EIP-712 digest under the token's own domain, the
    /// very digest the token will ask this wallet to vouch for (ERC-1271). The reservation is
    /// checked by every rule a `pay` is checked by, then counted as spent and recorded with a
    /// receipt; [`isValidSignature`](Self::is_valid_signature) then vouches for the digest until
    /// `validBefore`, while the session could still pay. Above the co-sign threshold it waits
    /// for the owner like a pending payment. Returns `(true, receiptId)` when reserved,
    /// `(false, pendingId)` when pending. The session's own nonces are not used.
    ///
    /// # Errors
    /// * [`WalletInvalidParameter`]`(Authorization)` — a native-currency session, or
    ///   `validBefore` not in the future or after the session's expiry.
    /// * [`WalletNonceUsed`] — this authorization was reserved (or used) before.
    /// * As `pay`: session state, signature (the session key's over the digest) and policy.
    /// * [`WalletCallFailed`] — the token has no `DOMAIN_SEPARATOR()` or `authorizationState`
    ///   (the authorization could never be settled or released), or the registry failed.
    ///
    /// # Events
    /// [`PaymentReserved`] (and the registry's `ReceiptRecorded`), or [`PaymentPending`].
    #[allow(clippy::too_many_arguments)]
    pub fn reserve(
        &mut self,
        session_id: U256,
        to: Address,
        value: U256,
        valid_after: U256,
        valid_before: U256,
        purpose: B256,
        signature: Bytes,
    ) -> Result<(bool, U256)> {
        self.reserve_signed(
            session_id,
            to,
            value,
            valid_after,
            valid_before,
            purpose,
            &signature,
        )
    }

    /// Releases a reserved authorization that can no longer be used and never was: once
    /// `validBefore` has passed, and the token says the authorization is unused
    /// (`authorizationState(wallet, nonce)`), its amount is taken off the session's `spent`
    /// (and refunded to the owner if the session is closed) and its receipt is marked
    /// released. Anyone may call it, with what `reserve` was given. Returns the amount.
    ///
    /// # Errors
    /// * [`WalletInvalidParameter`]`(Authorization)` — an unknown or native-currency session.
    /// * [`WalletUnknownReservation`] — no reserved authorization is this one, or it was
    ///   released (or rejected by the owner).
    /// * [`WalletReservationLive`] — `validBefore` has not passed.
    /// * [`WalletReservationUsed`] — the token says it was used (paid).
    /// * [`WalletCallFailed`] — the token or the registry failed.
    ///
    /// # Events
    /// [`ReservationReleased`] (and the registry's `ReceiptReleased`), [`RefundDeferred`] when a
    /// closed session's owner could not be paid.
    pub fn release(
        &mut self,
        session_id: U256,
        to: Address,
        value: U256,
        valid_after: U256,
        valid_before: U256,
        purpose: B256,
    ) -> Result<U256> {
        self.release_authorization(session_id, to, value, valid_after, valid_before, purpose)
    }

    /// ERC-1271: the magic value `0x1626ba7e` for a reserved (and, above the co-sign
    /// threshold, approved) authorization's digest before its `validBefore`, while its session
    /// is live (not revoked, closed, expired or lapsed), with `signature` the session key's
    /// over the digest; `0xffffffff` otherwise.
    pub fn is_valid_signature(&self, hash: B256, signature: Bytes) -> FixedBytes<4> {
        FixedBytes(self.vouches(hash, &signature))
    }

    /// A reservation: `(sessionId, amount, validBefore, receiptId)`; amount 0 once released
    /// (or rejected), receipt 0 while it waits for the owner; all zero for an unknown digest.
    pub fn reservation(&self, digest: B256) -> (U256, U256, u64, U256) {
        let r = self.reservations.getter(digest);
        (
            r.session_id.get(),
            session::widen(r.amount.get()),
            r.valid_before.get().to(),
            U256::from(r.receipt.get().to::<u64>()),
        )
    }

    /// Reserves a deposit into an x402 `batch-settlement` channel for a third party (x402's
    /// facilitator) to send: the EIP-3009 `receiveWithAuthorization(from = this wallet, to =
    /// x402's ERC-3009 collector, value, validAfter = 0, validBefore, nonce)` the collector
    /// takes when `x402BatchSettlement.deposit` is sent for the channel (payer: this wallet;
    /// payer authorizer: the session key; receiver, receiver authorizer, withdraw delay as
    /// given; token: the session's; salt: `bytes32(sessionId)`). Its nonce is
    /// `keccak256(abi.encode(channelId, salt))`, x402's, with the salt derived as `reserve`'s
    /// nonce (from `sessionId, receiver, value, 0, validBefore, purpose`). The session key signs
    /// the authorization's digest under the token's domain; the deposit is checked by every
    /// rule a `pay` to the receiver is checked by, counted as spent and given a receipt, and
    /// `isValidSignature` vouches for it until `validBefore`. Above the co-sign threshold it
    /// waits for the owner. Returns `(true, receiptId)` or `(false, pendingId)`.
    ///
    /// # Errors
    /// * [`WalletInvalidParameter`]`(Authorization)` — as `reserve`.
    /// * [`WalletInvalidParameter`]`(Channel)` — a withdraw delay outside 900 s to 30 days or
    ///   ending after the session's expiry.
    /// * As `reserve`.
    #[allow(clippy::too_many_arguments)]
    pub fn reserve_deposit(
        &mut self,
        session_id: U256,
        receiver: Address,
        receiver_authorizer: Address,
        withdraw_delay: u64,
        value: U256,
        valid_before: U256,
        purpose: B256,
        signature: Bytes,
    ) -> Result<(bool, U256)> {
        let channel = channel::Terms {
            session_id,
            receiver,
            receiver_authorizer,
            withdraw_delay,
        };
        let d = channel::Deposit {
            channel,
            value,
            valid_before,
            purpose,
        };
        self.reserve_deposit_signed(&d, &signature)
    }

    /// Counts a reserved deposit the token says it used (`authorizationState`) as in its
    /// channel; the wallet no longer vouches for it. Anyone may call it, with what
    /// `reserveDeposit` was given. Returns the channel's confirmed deposits.
    ///
    /// # Errors
    /// * [`WalletUnknownReservation`] — no such deposit reserved, or confirmed or released.
    /// * [`WalletReservationLive`] — the token has not used it (yet).
    /// * [`WalletCallFailed`] — the token failed.
    ///
    /// # Events
    /// [`DepositConfirmed`].
    #[allow(clippy::too_many_arguments)]
    pub fn confirm_deposit(
        &mut self,
        session_id: U256,
        receiver: Address,
        receiver_authorizer: Address,
        withdraw_delay: u64,
        value: U256,
        valid_before: U256,
        purpose: B256,
    ) -> Result<U256> {
        let channel = channel::Terms {
            session_id,
            receiver,
            receiver_authorizer,
            withdraw_delay,
        };
        self.confirm_channel_deposit(&channel::Deposit {
            channel,
            value,
            valid_before,
            purpose,
        })
    }

    /// `release` for a reserved deposit that was never used and no longer can be.
    ///
    /// # Errors
    /// As `release`.
    #[allow(clippy::too_many_arguments)]
    pub fn release_deposit(
        &mut self,
        session_id: U256,
        receiver: Address,
        receiver_authorizer: Address,
        withdraw_delay: u64,
        value: U256,
        valid_before: U256,
        purpose: B256,
    ) -> Result<U256> {
        let channel = channel::Terms {
            session_id,
            receiver,
            receiver_authorizer,
            withdraw_delay,
        };
        self.release_channel_deposit(&channel::Deposit {
            channel,
            value,
            valid_before,
            purpose,
        })
    }

    /// Credits the session with what its channel returned (the escrow's refunds and
    /// withdrawals pay this wallet): its confirmed deposits less what the escrow still holds
    /// for it, less what was credited before. Taken off the session's `spent`, or refunded to
    /// the owner of a closed session. Anyone may call it; returns the amount credited now.
    ///
    /// # Errors
    /// * [`WalletCallFailed`] — the escrow could not be read.
    ///
    /// # Events
    /// [`ChannelCredited`] (and [`RefundDeferred`] when a closed session's owner cannot be paid).
    pub fn credit_channel(
        &mut self,
        session_id: U256,
        receiver: Address,
        receiver_authorizer: Address,
        withdraw_delay: u64,
    ) -> Result<U256> {
        self.credit_channel_returns(&channel::Terms {
            session_id,
            receiver,
            receiver_authorizer,
            withdraw_delay,
        })
    }

    /// The payer's way out of a channel the receiver does not refund: starts the escrow's
    /// withdrawal of everything unclaimed, or finalizes the one started once its delay has
    /// passed (the money returns to this wallet: `creditChannel` then credits it). The owner
    /// or guardian may call it at any time; anyone once the session can no longer pay.
    ///
    /// # Errors
    /// * [`WalletUnknownSession`] — no such session.
    /// * [`WalletUnauthorized`] — another caller while the session can pay.
    /// * [`WalletInvalidParameter`]`(Channel)` — nothing unclaimed to withdraw.
    /// * [`WalletCallFailed`] — the escrow refused (its delay has not passed…).
    pub fn withdraw_channel(
        &mut self,
        session_id: U256,
        receiver: Address,
        receiver_authorizer: Address,
        withdraw_delay: u64,
    ) -> Result<()> {
        self.withdraw_from_channel(&channel::Terms {
            session_id,
            receiver,
            receiver_authorizer,
            withdraw_delay,
        })
    }

    /// A channel's `(deposited, credited)`: deposits confirmed into it, returns credited.
    pub fn channel(&self, channel_id: B256) -> (U256, U256) {
        self.channel_totals(channel_id)
    }
}

// Internal machinery, not part of the ABI.
impl SessionWallet {
    /// `pay`, with the signature borrowed (the router's entry point: no `Bytes` on chain).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn pay_signed(
        &mut self,
        session_id: U256,
        to: Address,
        amount: U256,
        purpose: B256,
        nonce: U256,
        deadline: U256,
        signature: &[u8],
    ) -> Result<(bool, U256)> {
        let intent = PaymentIntent {
            session: session_id,
            to,
            amount,
            purpose,
            nonce,
            deadline,
        };
        let now = self.vm().block_timestamp();
        match self.take_intent(&intent, signature, now)? {
            Taken::Held(pending_id) => Ok((false, pending_id)),
            Taken::Spent { owner, token } => {
                self.send(token, to, amount)?;
                Ok((true, self.executed(&intent, owner, token)?))
            }
        }
    }

    /// Checks a signed intent by every rule, then holds it for the owner (above the co-sign
    /// threshold) or counts it as spent, and uses its nonce. The caller pays it out. Nothing
    /// is written when it is refused.
    pub(crate) fn take_intent(
        &mut self,
        i: &PaymentIntent,
        signature: &[u8],
        now: u64,
    ) -> Result<Taken> {
        if U256::from(now) > i.deadline {
            return Err(WalletDeadlinePassed {
                deadline: i.deadline,
            }
            .into());
        }
        let digest = self.digest(&[
            word(PAYMENT_INTENT_TYPEHASH),
            word(i.session),
            word(i.to),
            word(i.amount),
            word(i.purpose),
            word(i.nonce),
            word(i.deadline),
        ]);
        let needs_owner = self.admit(i.session, i.to, i.amount, digest, signature, now)?;
        let session_end = {
            let s = self.sessions.getter(i.session);
            if nonce::is_used(&s.nonces, i.nonce) {
                return Err(WalletNonceUsed { nonce: i.nonce }.into());
            }
            s.expires_at.get().to::<u64>()
        };
        let taken = if needs_owner {
            let expires_at = session_end.min(now.saturating_add(PENDING_TTL));
            Taken::Held(self.hold(
                i.session,
                i.to,
                i.amount,
                i.purpose,
                i.nonce,
                expires_at,
                B256::ZERO,
            ))
        } else {
            let (owner, token) = self.spend(i.session, i.amount, now)?;
            Taken::Spent { owner, token }
        };
        nonce::mark(&mut self.sessions.setter(i.session).nonces, i.nonce, true);
        Ok(taken)
    }

    /// Records the receipt of an intent paid out and announces it. Returns the receipt id.
    pub(crate) fn executed(
        &mut self,
        i: &PaymentIntent,
        owner: Address,
        token: Address,
    ) -> Result<U256> {
        let receipt_id = self.record_receipt(i.session, owner, i.to, token, i.amount, i.purpose)?;
        emit(
            self.vm(),
            PaymentExecuted::SIGNATURE_HASH,
            &[word(i.session), word(i.to), word(receipt_id)],
            &[word(i.amount), word(i.purpose), word(i.nonce)],
        );
        Ok(receipt_id)
    }

    /// Checks a spend the session key signed (`digest`) against every rule but the period
    /// budget, which is checked when it is spent: the session is live, the signature is the
    /// key's, the amount is non-zero, within the cap and the deposit left, and the payee is
    /// allowed. Answers whether it must wait for the owner (above the co-sign threshold).
    pub(crate) fn admit(
        &self,
        session_id: U256,
        to: Address,
        amount: U256,
        digest: B256,
        signature: &[u8],
        now: u64,
    ) -> Result<bool> {
        let (cap, threshold, list) = {
            let session = self.sessions.getter(session_id);
            session.ensure_live(session_id, now, true)?;
            (
                session.amount(&session.per_payment_cap),
                session.amount(&session.co_sign_threshold),
                session.list_id(),
            )
        };
        self.check_session_key(session_id, digest, signature)?;
        if amount.is_zero() {
            return Err(WalletError::invalid(InvalidParameter::Amount));
        }
        self.check_payee(to)?;
        if !cap.is_zero() && amount > cap {
            return Err(WalletPaymentCapExceeded { amount, cap }.into());
        }
        let available = self.sessions.getter(session_id).available();
        if amount > available {
            return Err(WalletInsufficientDeposit { amount, available }.into());
        }
        self.check_counterparty(list, to, amount)?;
        Ok(!threshold.is_zero() && amount > threshold)
    }

    /// Holds `amount` out of the session's deposit for the owner's decision until
    /// `expires_at`; `authorization` is the digest of a held `reserve` (zero for a payment).
    /// Returns the pending id.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn hold(
        &mut self,
        session_id: U256,
        to: Address,
        amount: U256,
        purpose: B256,
        nonce: U256,
        expires_at: u64,
        authorization: B256,
    ) -> U256 {
        let pending_id = self.pending_count.get() + U256::from(1);
        self.pending_count.set(pending_id);
        {
            let mut session = self.sessions.setter(session_id);
            let held = session.amount(&session.held) + amount;
            session.held.set(session::narrow(held));
        }
        let mut pending = self.pendings.setter(pending_id);
        pending.session_id.set(session_id);
        pending.to.set(to);
        pending.status.set(U8::from(PendingStatus::Pending as u8));
        pending.expires_at.set(U64::from(expires_at));
        pending.amount.set(amount);
        pending.purpose.set(purpose);
        pending.nonce.set(nonce);
        if !authorization.is_zero() {
            pending.authorization.set(authorization);
        }
        emit(
            self.vm(),
            PaymentPending::SIGNATURE_HASH,
            &[word(session_id), word(to), word(pending_id)],
            &[word(amount), word(purpose), word(nonce), word(expires_at)],
        );
        pending_id
    }

    /// `renewLease`, with the signature borrowed (the router's entry point).
    pub(crate) fn renew_signed(
        &mut self,
        session_id: U256,
        nonce: U256,
        deadline: U256,
        signature: &[u8],
    ) -> Result<u64> {
        let now = self.vm().block_timestamp();
        let caller = self.vm().msg_sender();
        let (renewer, direct, lease_seconds, start, current) = {
            let session = self.sessions.getter(session_id);
            let keeper = session.lease_keeper.get();
            // A keeper may revive a lapsed lease (its sandbox was paused and came back); the
            // session key alone may not, so that a sandbox cannot outlive its host.
            if keeper.is_zero() {
                session.ensure_live(session_id, now, false)?;
            } else {
                session.ensure_unexpired(session_id, now, false)?;
            }
            let renewer = if keeper.is_zero() {
                session.session_key.get()
            } else {
                keeper
            };
            (
                renewer,
                caller == session.owner.get() || caller == renewer,
                session.lease_seconds.get().to::<u64>(),
                now.max(session.valid_after.get().to::<u64>()),
                session.lease_expires_at.get().to::<u64>(),
            )
        };
        if lease_seconds == 0 {
            return Err(WalletNoLease {
                sessionId: session_id,
            }
            .into());
        }
        if !direct {
            if signature.is_empty() {
                return Err(WalletUnauthorized { caller }.into());
            }
            self.check_deadline(deadline)?;
            let digest = self.digest(&[
                word(LEASE_RENEWAL_TYPEHASH),
                word(session_id),
                word(nonce),
                word(deadline),
            ]);
            self.check_signer(renewer, digest, signature)?;
            self.consume_session_nonce(session_id, nonce)?;
        }
        let lease_expires_at = current.max(start.saturating_add(lease_seconds));
        self.sessions
            .setter(session_id)
            .lease_expires_at
            .set(U64::from(lease_expires_at));
        emit(
            self.vm(),
            LeaseRenewed::SIGNATURE_HASH,
            &[word(session_id)],
            &[word(lease_expires_at)],
        );
        Ok(lease_expires_at)
    }

    /// Validates `t`, records the session under its id (`owner`'s `nonce`), then escrows the
    /// deposit (`value` for native sessions, else pulled from `owner`).
    fn open(&mut self, owner: Address, nonce: U256, t: &Terms, value: U256) -> Result<U256> {
        let now = self.vm().block_timestamp();
        if t.session_key.is_zero() {
            return Err(WalletError::invalid(InvalidParameter::SessionKey));
        }
        if t.deposit.is_zero() {
            return Err(WalletError::invalid(InvalidParameter::Deposit));
        }
        let start = now.max(t.valid_after);
        if t.expires_at <= start {
            return Err(WalletError::invalid(InvalidParameter::ExpiresAt));
        }
        if (t.period_seconds == 0) != t.period_budget.is_zero() {
            return Err(WalletError::invalid(InvalidParameter::Period));
        }
        let amounts = [
            t.deposit,
            t.per_payment_cap,
            t.period_budget,
            t.co_sign_threshold,
        ];
        // A list's id (64 bits) and the time it is pinned at (32 bits).
        if amounts.iter().any(|a| *a > U256::from(u128::MAX)) || t.allowlist_id >> 96 != U256::ZERO
        {
            return Err(WalletError::invalid(InvalidParameter::OutOfRange));
        }
        let id = Self::session_id(owner, nonce);
        if self.sessions.getter(id).status() != SessionStatus::None as u8 {
            return Err(WalletNonceUsed { nonce }.into());
        }
        let mut s = self.sessions.setter(id);
        s.owner.set(owner);
        s.status.set(U8::from(SessionStatus::Active as u8));
        s.session_key.set(t.session_key);
        s.guardian.set(t.guardian);
        s.token.set(t.token);
        s.deposit.set(session::narrow(t.deposit));
        s.per_payment_cap.set(session::narrow(t.per_payment_cap));
        s.period_budget.set(session::narrow(t.period_budget));
        s.period_seconds.set(U64::from(t.period_seconds));
        s.period_start.set(U64::from(start));
        s.co_sign_threshold
            .set(session::narrow(t.co_sign_threshold));
        s.valid_after.set(U64::from(t.valid_after));
        s.expires_at.set(U64::from(t.expires_at));
        s.lease_seconds.set(U64::from(t.lease_seconds));
        s.lease_keeper.set(t.lease_keeper);
        if t.lease_seconds != 0 {
            s.lease_expires_at
                .set(U64::from(start.saturating_add(t.lease_seconds)));
        }
        let [list, as_of, _, _] = t.allowlist_id.into_limbs();
        s.allowlist_id.set(U64::from_limbs([list]));
        s.allowlist_as_of.set(U32::from(as_of as u32));
        emit(
            self.vm(),
            SessionOpened::SIGNATURE_HASH,
            &[word(id), word(owner), word(t.session_key)],
            &[
                word(t.guardian),
                word(t.token),
                word(t.deposit),
                word(t.per_payment_cap),
                word(t.period_budget),
                word(t.period_seconds),
                word(t.co_sign_threshold),
                word(t.valid_after),
                word(t.expires_at),
                word(t.lease_seconds),
                word(t.lease_keeper),
                word(t.allowlist_id),
                word(t.metadata),
            ],
        );
        self.receive_funds(t.token, owner, t.deposit, value)?;
        Ok(id)
    }

    /// Approves or rejects pending payment `id` on behalf of `by` (the caller, or the owner the
    /// gateway vouches for). Returns the receipt id of an approval.
    fn decide(&mut self, pending_id: U256, approve: bool, by: Address) -> Result<Option<U256>> {
        let now = self.vm().block_timestamp();
        let (session_id, to, amount, purpose, nonce, expires_at, authorization) = {
            let p = self.pendings.getter(pending_id);
            let status = p.status.get().to::<u8>();
            if status == PendingStatus::None as u8 {
                return Err(WalletUnknownPending {
                    pendingId: pending_id,
                }
                .into());
            }
            if status != PendingStatus::Pending as u8 {
                return Err(WalletPendingResolved {
                    pendingId: pending_id,
                    status,
                }
                .into());
            }
            (
                p.session_id.get(),
                p.to.get(),
                p.amount.get(),
                p.purpose.get(),
                p.nonce.get(),
                p.expires_at.get().to::<u64>(),
                p.authorization.get(),
            )
        };
        let (owner, list) = {
            let s = self.sessions.getter(session_id);
            (s.owner.get(), s.list_id())
        };
        let expired = now >= expires_at;
        // Expired requests are litter anyone may clear; deciding live ones is the owner's.
        if by != owner && (approve || !expired) {
            return Err(WalletUnauthorized { caller: by }.into());
        }
        if approve {
            if expired {
                return Err(WalletPendingExpired {
                    pendingId: pending_id,
                    expiresAt: expires_at,
                }
                .into());
            }
            self.sessions
                .getter(session_id)
                .ensure_live(session_id, now, true)?;
            self.check_counterparty(list, to, amount)?;
        }
        {
            let mut s = self.sessions.setter(session_id);
            let held = s.amount(&s.held).saturating_sub(amount);
            s.held.set(session::narrow(held));
        }
        let new_status = if approve {
            PendingStatus::Approved
        } else {
            PendingStatus::Rejected
        };
        self.pendings
            .setter(pending_id)
            .status
            .set(U8::from(new_status as u8));
        if !approve {
            if !authorization.is_zero() {
                // Never vouched for, and never again: the digest stays taken.
                self.reservations
                    .setter(authorization)
                    .amount
                    .set(U128::ZERO);
            }
            emit(
                self.vm(),
                PaymentRejected::SIGNATURE_HASH,
                &[word(session_id), word(pending_id), word(by)],
                &[],
            );
            return Ok(None);
        }
        emit(
            self.vm(),
            PaymentApproved::SIGNATURE_HASH,
            &[word(session_id), word(pending_id), word(by)],
            &[],
        );
        let (owner, token) = self.spend(session_id, amount, now)?;
        if !authorization.is_zero() {
            let receipt_id = self.record_receipt(session_id, owner, to, token, amount, purpose)?;
            self.confirm_reservation(authorization, to, purpose, nonce, receipt_id);
            return Ok(Some(receipt_id));
        }
        self.send(token, to, amount)?;
        let paid = PaymentIntent {
            session: session_id,
            to,
            amount,
            purpose,
            nonce,
            deadline: U256::ZERO,
        };
        self.executed(&paid, owner, token).map(Some)
    }

    /// Counts `amount` as spent by the session, period budget permitting (the caller has
    /// checked the rest). Returns the session's owner and token.
    pub(crate) fn spend(
        &mut self,
        session_id: U256,
        amount: U256,
        now: u64,
    ) -> Result<(Address, Address)> {
        let mut s = self.sessions.setter(session_id);
        let available = s.period_available(now);
        if amount > available {
            return Err(WalletPeriodBudgetExceeded { amount, available }.into());
        }
        // Without a budget there is no period to account for.
        if s.period_seconds.get() != U64::ZERO {
            let (period_start, period_spent) = s.current_period(now);
            s.period_start.set(U64::from(period_start));
            s.period_spent.set(session::narrow(period_spent + amount));
        }
        let spent = s.amount(&s.spent) + amount;
        s.spent.set(session::narrow(spent));
        Ok((s.owner.get(), s.token.get()))
    }

    /// Has the ReceiptRegistry record a spend; returns the receipt id.
    pub(crate) fn record_receipt(
        &mut self,
        session_id: U256,
        owner: Address,
        to: Address,
        token: Address,
        amount: U256,
        purpose: B256,
    ) -> Result<U256> {
        let registry = self.receipt_registry.get();
        let data = calldata::encode(
            IReceiptRegistry::recordReceiptCall::SELECTOR,
            &[
                word(session_id),
                word(owner),
                word(to),
                word(token),
                word(amount),
                word(purpose),
            ],
        );
        let out = call::call(self.vm(), registry, &data)
            .map_err(|reason| call_failed(registry, reason))?;
        Ok(calldata::decode_word(&out).unwrap_or_default())
    }

    /// Pays `owner` a refund, or when the transfer fails (an owner contract that refuses ETH,
    /// a token that blocks the owner) credits it to their `claimable` balance.
    pub(crate) fn refund(
        &mut self,
        session_id: U256,
        owner: Address,
        token: Address,
        amount: U256,
    ) {
        if token::send(self.vm(), token, owner, amount) {
            return;
        }
        let mut owed = self.claimable.setter(owner);
        let mut balance = owed.setter(token);
        let total = balance.get().saturating_add(amount);
        balance.set(total);
        emit(
            self.vm(),
            RefundDeferred::SIGNATURE_HASH,
            &[word(session_id), word(owner), word(token)],
            &[word(amount)],
        );
    }

    fn check_counterparty(&self, list: U256, to: Address, amount: U256) -> Result<()> {
        let registry = self.counterparty_registry.get();
        let data = calldata::encode(
            ICounterpartyRegistry::isAllowedCall::SELECTOR,
            &[word(list), word(to), word(amount)],
        );
        let out = call::view(self.vm(), registry, &data)
            .ok_or_else(|| call_failed(registry, Vec::new()))?;
        if calldata::decode_word(&out) != Some(U256::from(1)) {
            return Err(WalletCounterpartyNotAllowed {
                listId: list,
                counterparty: to,
                amount,
            }
            .into());
        }
        Ok(())
    }

    /// Takes `amount` of `token` from `from` into escrow, given the call's `value`. A token
    /// must be a contract and must move exactly `amount`: the wallet's balance is read before
    /// and after the pull (fee-on-transfer and rebasing tokens are not supported).
    fn receive_funds(
        &mut self,
        token: Address,
        from: Address,
        amount: U256,
        value: U256,
    ) -> Result<()> {
        let expected = if token == token::NATIVE {
            amount
        } else {
            U256::ZERO
        };
        if value != expected {
            return Err(WalletValueMismatch {
                sent: value,
                expected,
            }
            .into());
        }
        if token == token::NATIVE {
            return Ok(());
        }
        if self.vm().code_size(token) == 0 {
            return Err(WalletTokenWithoutCode { token }.into());
        }
        let this = self.vm().contract_address();
        let failed = WalletTransferFailed {
            token,
            to: this,
            amount,
        };
        let before = token::balance_of(self.vm(), token, this).ok_or(failed.clone())?;
        if !token::pull(self.vm(), token, from, amount) {
            return Err(failed.into());
        }
        let after = token::balance_of(self.vm(), token, this).ok_or(failed)?;
        let received = after.saturating_sub(before);
        if received != amount {
            return Err(WalletTransferShortfall {
                token,
                expected: amount,
                received,
            }
            .into());
        }
        Ok(())
    }

    /// Fails for payees that would break the escrow: zero, this wallet, its gateway and
    /// registries (a payment to them counts as spent but is never paid out or refunded).
    fn check_payee(&self, to: Address) -> Result<()> {
        if to.is_zero()
            || to == self.vm().contract_address()
            || to == self.counterparty_registry.get()
            || to == self.receipt_registry.get()
            || to == self.gateway.get()
        {
            return Err(WalletInvalidPayee { payee: to }.into());
        }
        Ok(())
    }

    fn send(&mut self, token: Address, to: Address, amount: U256) -> Result<()> {
        if !token::send(self.vm(), token, to, amount) {
            return Err(WalletTransferFailed { token, to, amount }.into());
        }
        Ok(())
    }

    fn digest(&self, words: &[bursar_contract_common::Word]) -> B256 {
        typed_data_hash(self.domain_separator(), hash_words(words))
    }

    fn check_deadline(&self, deadline: U256) -> Result<()> {
        if U256::from(self.vm().block_timestamp()) > deadline {
            return Err(WalletDeadlinePassed { deadline }.into());
        }
        Ok(())
    }

    /// Fails unless `signature` is the session key's signature of `digest`.
    fn check_session_key(&self, session_id: U256, digest: B256, signature: &[u8]) -> Result<()> {
        let expected = self.sessions.getter(session_id).session_key.get();
        self.check_signer(expected, digest, signature)
    }

    /// Fails unless `signature` is `expected`'s signature of `digest`.
    fn check_signer(&self, expected: Address, digest: B256, signature: &[u8]) -> Result<()> {
        let signer =
            signature::recover(self.vm(), digest, signature).ok_or(WalletInvalidSignature {})?;
        if signer != expected {
            return Err(WalletWrongSigner { signer, expected }.into());
        }
        Ok(())
    }

    fn consume_session_nonce(&mut self, session_id: U256, n: U256) -> Result<()> {
        let mut session = self.sessions.setter(session_id);
        if !nonce::consume(&mut session.nonces, n) {
            return Err(WalletNonceUsed { nonce: n }.into());
        }
        Ok(())
    }
}

/// An amount that must fit the stored `uint128`.
fn in_range(amount: Option<U256>) -> Result<U256> {
    amount
        .filter(|a| *a <= U256::from(u128::MAX))
        .ok_or(WalletError::invalid(InvalidParameter::OutOfRange))
}

fn call_failed(target: Address, reason: Vec<u8>) -> WalletError {
    WalletError::CallFailed { target, reason }
}
