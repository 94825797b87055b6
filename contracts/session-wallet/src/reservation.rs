//! Authorizations a third party settles: the session wallet as an ERC-1271 payer of EIP-3009
//! `transferWithAuthorization` (x402's `exact` scheme in USDC).
//!
//! `reserve` admits an authorization under the session's rules and counts it as spent; the
//! token then asks the wallet (`isValidSignature`) whether it vouches for the authorization's
//! digest, and the wallet does only for a reserved digest before its `validBefore` while the
//! session could still pay, signed by the session's key. What the wallet holds for a
//! reservation leaves it only through the token, to the payee the rules admitted; if the
//! authorization is never used, `release` gives the amount back once it cannot be.
//!
//! The escrow invariant, per token: the wallet's balance is Σ deposit − spent − refunded +
//! Σ amounts of reservations neither used nor released (reserved money is counted as spent
//! when reserved and leaves when the third party settles; a release takes it off `spent`
//! again, and refunds it to the owner if the session is closed).

use alloc::vec::Vec;
use alloy_primitives::{Address, B256, U128, U256, U64};
use alloy_sol_types::{SolCall, SolEvent};
use bursar_bindings::{
    eip712::TRANSFER_WITH_AUTHORIZATION_TYPEHASH,
    evm::IFiatToken,
    receipts::IReceiptRegistry,
    wallet::{ISessionWallet::*, InvalidParameter, SessionStatus, ERC1271_MAGIC_VALUE},
};
use bursar_contract_common::{
    call, calldata,
    eip712::{hash_words, typed_data_hash},
    event::emit,
    signature, token, word,
};
use stylus_sdk::{prelude::*, storage::*};

use crate::{call_failed, session, Result, SessionWallet, WalletError};

/// One reserved authorization, in two slots.
#[storage]
pub struct Reservation {
    /// The session it is paid from (zero: never reserved).
    pub session_id: StorageU256,
    /// Its value; zero once released, or rejected by the owner.
    pub amount: StorageU128,
    /// The authorization's `validBefore`: usable before it, releasable from it.
    pub valid_before: StorageU64,
    /// Its receipt; zero while it waits for the owner.
    pub receipt: StorageU64,
}

/// The authorization's EIP-3009 nonce, derived from everything else it says and the purpose
/// (as `bursar_bindings::wallet::authorization_nonce`): one nonce, one authorization.
pub(crate) fn authorization_nonce(
    session_id: U256,
    to: Address,
    value: U256,
    valid_after: U256,
    valid_before: U256,
    purpose: B256,
) -> B256 {
    hash_words(&[
        word(session_id),
        word(to),
        word(value),
        word(valid_after),
        word(valid_before),
        word(purpose),
    ])
}

/// What `isValidSignature` answers for anything it does not vouch for.
const NOT_VOUCHED: [u8; 4] = [0xff; 4];

impl SessionWallet {
    /// `reserve`, with the signature borrowed (the router's entry point).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn reserve_signed(
        &mut self,
        session_id: U256,
        to: Address,
        value: U256,
        valid_after: U256,
        valid_before: U256,
        purpose: B256,
        signature: &[u8],
    ) -> Result<(bool, U256)> {
        let now = self.vm().block_timestamp();
        let (token, session_end) = {
            let s = self.sessions.getter(session_id);
            (s.token.get(), s.expires_at.get().to::<u64>())
        };
        // An unknown session has no token either: `ensure_open` names it unknown.
        let before = valid_before.saturating_to::<u64>();
        if token == token::NATIVE || before <= now || valid_before > U256::from(session_end) {
            self.sessions.getter(session_id).ensure_open(session_id)?;
            return Err(WalletError::invalid(InvalidParameter::Authorization));
        }
        let nonce = authorization_nonce(session_id, to, value, valid_after, valid_before, purpose);
        let digest = self.authorization_digest(
            token,
            TRANSFER_WITH_AUTHORIZATION_TYPEHASH,
            to,
            value,
            valid_after,
            valid_before,
            nonce,
        )?;
        self.reserve_digest(
            session_id, to, value, before, purpose, nonce, digest, signature,
        )
    }

    /// Reserves the authorization of `value` with EIP-3009 `nonce` whose digest under the
    /// token's domain is `digest`, paying `to` under the session's rules (the caller checked
    /// the token and the window, and derived the nonce): `reserve` and `reserveDeposit`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn reserve_digest(
        &mut self,
        session_id: U256,
        to: Address,
        value: U256,
        before: u64,
        purpose: B256,
        nonce: B256,
        digest: B256,
        signature: &[u8],
    ) -> Result<(bool, U256)> {
        let now = self.vm().block_timestamp();
        let token = self.sessions.getter(session_id).token.get();
        if !self.reservations.getter(digest).session_id.get().is_zero() {
            return Err(WalletNonceUsed {
                nonce: U256::from_be_bytes(nonce.0),
            }
            .into());
        }
        // A token that cannot say whether the authorization was used could never let it be
        // released: the amount would stay spent for good. Ask before anything is counted.
        if self.authorization_used(token, nonce)? {
            return Err(WalletNonceUsed {
                nonce: U256::from_be_bytes(nonce.0),
            }
            .into());
        }
        let needs_owner = self.admit(session_id, to, value, digest, signature, now)?;
        {
            let mut r = self.reservations.setter(digest);
            r.session_id.set(session_id);
            r.amount.set(session::narrow(value));
            r.valid_before.set(U64::from(before));
        }
        let nonce_word = U256::from_be_bytes(nonce.0);
        if needs_owner {
            let expires_at = before.min(now.saturating_add(crate::PENDING_TTL));
            let id = self.hold(
                session_id, to, value, purpose, nonce_word, expires_at, digest,
            );
            return Ok((false, id));
        }
        let (owner, token) = self.spend(session_id, value, now)?;
        let receipt_id = self.record_receipt(session_id, owner, to, token, value, purpose)?;
        self.confirm_reservation(digest, to, purpose, nonce_word, receipt_id);
        Ok((true, receipt_id))
    }

    /// Makes a reservation one the wallet vouches for, with its receipt.
    pub(crate) fn confirm_reservation(
        &mut self,
        digest: B256,
        to: Address,
        purpose: B256,
        nonce: U256,
        receipt_id: U256,
    ) {
        let (session_id, amount, valid_before) = {
            let mut r = self.reservations.setter(digest);
            r.receipt.set(U64::from(receipt_id.saturating_to::<u64>()));
            (r.session_id.get(), r.amount.get(), r.valid_before.get())
        };
        emit(
            self.vm(),
            PaymentReserved::SIGNATURE_HASH,
            &[word(session_id), word(to), word(receipt_id)],
            &[
                word(session::widen(amount)),
                word(purpose),
                word(nonce),
                word(digest),
                word(valid_before.to::<u64>()),
            ],
        );
    }

    /// `release`.
    pub(crate) fn release_authorization(
        &mut self,
        session_id: U256,
        to: Address,
        value: U256,
        valid_after: U256,
        valid_before: U256,
        purpose: B256,
    ) -> Result<U256> {
        let token = self.sessions.getter(session_id).token.get();
        // Unknown and native sessions have no reservations: nothing to compute a digest for.
        if token == token::NATIVE {
            return Err(WalletError::invalid(InvalidParameter::Authorization));
        }
        let nonce = authorization_nonce(session_id, to, value, valid_after, valid_before, purpose);
        let digest = self.authorization_digest(
            token,
            TRANSFER_WITH_AUTHORIZATION_TYPEHASH,
            to,
            value,
            valid_after,
            valid_before,
            nonce,
        )?;
        self.release_digest(session_id, to, nonce, digest)
    }

    /// Releases the reservation `digest` (EIP-3009 `nonce`) of a session paying `to`, once
    /// it can no longer be used and never was: `release` and `releaseDeposit`.
    pub(crate) fn release_digest(
        &mut self,
        session_id: U256,
        to: Address,
        nonce: B256,
        digest: B256,
    ) -> Result<U256> {
        let now = self.vm().block_timestamp();
        let token = self.sessions.getter(session_id).token.get();
        let (amount, before, receipt) = {
            let r = self.reservations.getter(digest);
            (
                session::widen(r.amount.get()),
                r.valid_before.get().to::<u64>(),
                r.receipt.get(),
            )
        };
        if amount.is_zero() || receipt == U64::ZERO {
            return Err(WalletUnknownReservation { digest }.into());
        }
        if now < before {
            return Err(WalletReservationLive {
                digest,
                validBefore: before,
            }
            .into());
        }
        if self.authorization_used(token, nonce)? {
            return Err(WalletReservationUsed { digest }.into());
        }
        self.reservations.setter(digest).amount.set(U128::ZERO);
        // Not spent after all; a closed session's owner gets it back at once.
        let (closed, owner) = {
            let mut s = self.sessions.setter(session_id);
            let spent = s.amount(&s.spent).saturating_sub(amount);
            s.spent.set(session::narrow(spent));
            (s.status() == SessionStatus::Closed as u8, s.owner.get())
        };
        let receipt_id = U256::from(receipt.to::<u64>());
        emit(
            self.vm(),
            ReservationReleased::SIGNATURE_HASH,
            &[word(session_id), word(to), word(receipt_id)],
            &[word(digest), word(amount)],
        );
        if closed {
            self.refund(session_id, owner, token, amount);
        }
        let registry = self.receipt_registry.get();
        let data = calldata::encode(
            IReceiptRegistry::releaseReceiptCall::SELECTOR,
            &[word(receipt_id)],
        );
        call::call(self.vm(), registry, &data).map_err(|reason| call_failed(registry, reason))?;
        Ok(amount)
    }

    /// The token's `authorizationState(this wallet, nonce)`: whether it used the authorization.
    pub(crate) fn authorization_used(&self, token: Address, nonce: B256) -> Result<bool> {
        let this = self.vm().contract_address();
        let data = calldata::encode(
            IFiatToken::authorizationStateCall::SELECTOR,
            &[word(this), word(nonce)],
        );
        call::view(self.vm(), token, &data)
            .and_then(|out| calldata::decode_word(&out))
            .map(|used| !used.is_zero())
            .ok_or_else(|| call_failed(token, Vec::new()))
    }

    /// `isValidSignature`'s answer for `digest` and `signature`.
    pub(crate) fn vouches(&self, digest: B256, signature: &[u8]) -> [u8; 4] {
        let now = self.vm().block_timestamp();
        let r = self.reservations.getter(digest);
        let session_id = r.session_id.get();
        let live = r.receipt.get() != U64::ZERO
            && r.amount.get() != U128::ZERO
            && now < r.valid_before.get().to::<u64>();
        let session = self.sessions.getter(session_id);
        let vouched = live
            && session.ensure_live(session_id, now, false).is_ok()
            && signature::recover(self.vm(), digest, signature)
                .is_some_and(|signer| signer == session.session_key.get());
        if vouched {
            ERC1271_MAGIC_VALUE
        } else {
            NOT_VOUCHED
        }
    }

    /// The EIP-712 digest of an EIP-3009 authorization from this wallet (`typehash`: transfer
    /// or receive) under `token`'s domain, as the token computes it (its `DOMAIN_SEPARATOR()`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn authorization_digest(
        &self,
        token: Address,
        typehash: B256,
        to: Address,
        value: U256,
        valid_after: U256,
        valid_before: U256,
        nonce: B256,
    ) -> Result<B256> {
        let data = calldata::encode(IFiatToken::DOMAIN_SEPARATORCall::SELECTOR, &[]);
        let separator = call::view(self.vm(), token, &data)
            .and_then(|out| calldata::decode_word(&out))
            .ok_or_else(|| call_failed(token, Vec::new()))?;
        let this = self.vm().contract_address();
        Ok(typed_data_hash(
            B256::new(separator.to_be_bytes()),
            hash_words(&[
                word(typehash),
                word(this),
                word(to),
                word(value),
                word(valid_after),
                word(valid_before),
                word(nonce),
            ]),
        ))
    }
}
