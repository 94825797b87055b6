//! # SessionGateway
//!
//! Owner-signed entry points into SessionWallet. An owner (an EOA, or a contract wallet through
//! ERC-1271) signs an EIP-712 `OpenSession` or `PendingDecision`; anyone submits it here; the
//! gateway checks the signature and deadline (and a decision's nonce), submits the owner's
//! EIP-2612 permit, and forwards to the one SessionWallet it is bound to, which trusts it as the
//! owner's agent. An `OpenSession`'s nonce is not stored here: the wallet opens the session
//! under the id of the owner's nonce and never opens that id twice.
//!
//! Binding is unforgeable: only the binder named at construction (the deployer) may bind, only
//! once, and only to a wallet whose `gateway()` is this contract. After that nobody has any
//! power over the gateway.
//!
//! It is a separate contract so that SessionWallet stays far from Stylus's 24 KiB code limit:
//! ERC-1271, the owners' decision nonces and the two wide signed messages live here.
//!
//! The ABI, events and errors are declared once in `bursar_bindings::gateway`.
#![cfg_attr(not(any(test, feature = "export-abi")), no_main)]
#![cfg_attr(not(any(test, feature = "export-abi")), no_std)]
// `#[public]` generates an undocumented `print_from_args` for `export-abi`; the lints run
// without that feature too (`cargo xtask test`), where every public item needs docs.
#![cfg_attr(feature = "export-abi", allow(missing_docs))]

#[macro_use]
extern crate alloc;

pub mod error;

use alloc::vec::Vec;

use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::SolCall;
use bursar_bindings::{
    eip712::{OPEN_SESSION_TYPEHASH, PENDING_DECISION_TYPEHASH, SESSION_GATEWAY_DOMAIN},
    gateway::ISessionGateway::*,
    token::ITestToken,
    wallet::{ISessionWallet, InvalidParameter},
};
use bursar_contract_common::{
    call, calldata,
    eip712::{domain_separator, hash_words, typed_data_hash},
    nonce, signature, token, word, Word,
};
use stylus_sdk::{abi::Bytes, prelude::*, storage::*};

pub use error::GatewayError;

type Result<T, E = GatewayError> = core::result::Result<T, E>;

/// The gateway's storage: the one wallet it serves and the owners' used nonces.
#[storage]
#[entrypoint]
pub struct SessionGateway {
    /// May call `bind`, once; cleared when it does.
    binder: StorageAddress,
    wallet: StorageAddress,
    /// Owner nonces: an unordered bitmap each.
    nonces: StorageMap<Address, StorageMap<U256, StorageU256>>,
}

#[public]
impl SessionGateway {
    /// Names the one account that may bind the gateway (the deployer: contracts deployed
    /// through StylusDeployer see the deployer contract as their sender, so it is an argument).
    ///
    /// # Errors
    /// * [`GatewayInvalidParameter`]`(Registry)` — `binder` is zero.
    #[constructor]
    pub fn constructor(&mut self, binder: Address) -> Result<()> {
        if binder.is_zero() {
            return Err(invalid(InvalidParameter::Registry));
        }
        self.binder.set(binder);
        Ok(())
    }

    /// Binds the gateway to `wallet`, once, by the binder, and only if `wallet.gateway()` is
    /// this gateway: a gateway serves exactly one wallet, which trusts exactly this gateway.
    ///
    /// # Errors
    /// * [`GatewayAlreadyBound`] — bound before.
    /// * [`GatewayUnauthorized`] — the caller is not the binder.
    /// * [`GatewayWalletMismatch`] — `wallet` does not name this gateway.
    ///
    /// # Events
    /// [`GatewayBound`].
    pub fn bind(&mut self, wallet: Address) -> Result<()> {
        let bound = self.wallet.get();
        if !bound.is_zero() {
            return Err(GatewayAlreadyBound { wallet: bound }.into());
        }
        let caller = self.vm().msg_sender();
        if caller != self.binder.get() {
            return Err(GatewayUnauthorized { caller }.into());
        }
        if !call::names_this_contract(self.vm(), wallet, ISessionWallet::gatewayCall::SELECTOR) {
            return Err(GatewayWalletMismatch { wallet }.into());
        }
        self.wallet.set(wallet);
        self.binder.set(Address::ZERO);
        self.vm().log(GatewayBound { wallet });
        Ok(())
    }

    /// Opens a SessionWallet session for `owner` on the strength of the owner's EIP-712
    /// `OpenSession` signature, submitted by anyone. The ERC-20 deposit is pulled from the owner
    /// by the wallet; `permitSignature` (`r ‖ s ‖ v`, may be empty) is an EIP-2612 permit for
    /// exactly `deposit` to the wallet with the same `deadline`, submitted first.
    /// Returns the session id (the wallet's `sessionId(owner, nonce)`).
    ///
    /// # Errors
    /// * [`GatewayInvalidParameter`] — zero owner (`Owner`) or the native token (`Token`).
    /// * [`GatewayDeadlinePassed`], [`GatewayInvalidSignature`], [`GatewayNotBound`].
    /// * [`GatewayWalletCallFailed`] — the wallet refused, with its custom error as `reason`
    ///   (e.g. `WalletNonceUsed` when the owner's nonce already opened a session — a replay —,
    ///   `WalletTransferFailed` without allowance, `WalletTokenWithoutCode`).
    ///
    /// # Events
    /// The wallet's `SessionOpened`.
    #[allow(clippy::too_many_arguments)]
    pub fn open_session_with_sig(
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
        deadline: U256,
        owner_signature: Bytes,
        permit_signature: Bytes,
    ) -> Result<U256> {
        if owner.is_zero() {
            return Err(invalid(InvalidParameter::Owner));
        }
        if token == token::NATIVE {
            return Err(invalid(InvalidParameter::Token));
        }
        let wallet = self.bound_wallet()?;
        // The session's terms, word for word: the tail of the signed struct and the wallet call.
        let terms: [Word; 16] = [
            word(owner),
            word(session_key),
            word(guardian),
            word(token),
            word(deposit),
            word(per_payment_cap),
            word(period_budget),
            word(period_seconds),
            word(co_sign_threshold),
            word(valid_after),
            word(expires_at),
            word(lease_seconds),
            word(lease_keeper),
            word(allowlist_id),
            word(metadata),
            word(nonce),
        ];
        let mut message = [[0u8; 32]; 18];
        message[0] = word(OPEN_SESSION_TYPEHASH);
        message[1..17].copy_from_slice(&terms);
        message[17] = word(deadline);
        // No nonce is used up here: the wallet opens the session under the id of `owner`'s
        // `nonce` and refuses a second one, which makes the signature single-use.
        self.verify(owner, &message, deadline, &owner_signature)?;
        if !permit_signature.is_empty() {
            token::permit(
                self.vm(),
                token,
                owner,
                wallet,
                deposit,
                deadline,
                &permit_signature,
            );
        }
        let data = calldata::encode(ISessionWallet::openSessionCall::SELECTOR, &terms);
        let out = self.call_wallet(wallet, &data)?;
        Ok(calldata::decode_word(&out).unwrap_or_default())
    }

    /// Approves or rejects a pending SessionWallet payment with the session owner's EIP-712
    /// `PendingDecision` signature, submitted by anyone. Returns the receipt id of an approval
    /// (0 for a rejection).
    ///
    /// # Errors
    /// * [`GatewayUnknownPending`], [`GatewayNotBound`].
    /// * [`GatewayDeadlinePassed`], [`GatewayNonceUsed`], [`GatewayInvalidSignature`].
    /// * [`GatewayWalletCallFailed`] — the wallet refused, with its custom error as `reason`
    ///   (e.g. `WalletPendingExpired`, `WalletPeriodBudgetExceeded`).
    ///
    /// # Events
    /// The wallet's `PaymentApproved` and `PaymentExecuted`, or `PaymentRejected`.
    pub fn decide_pending_with_sig(
        &mut self,
        pending_id: U256,
        approve: bool,
        nonce: U256,
        deadline: U256,
        signature: Bytes,
    ) -> Result<U256> {
        let wallet = self.bound_wallet()?;
        let owner = self.pending_owner(wallet, pending_id)?;
        self.authorize(
            owner,
            &[
                word(PENDING_DECISION_TYPEHASH),
                word(pending_id),
                word(approve),
                word(nonce),
                word(deadline),
            ],
            nonce,
            deadline,
            &signature,
        )?;
        let data = calldata::encode(
            ISessionWallet::decidePendingForCall::SELECTOR,
            &[word(pending_id), word(approve), word(owner)],
        );
        let out = self.call_wallet(wallet, &data)?;
        Ok(calldata::decode_word(&out).unwrap_or_default())
    }

    /// ERC-7710's `redeemDelegations`: the gateway is the Delegation Manager of its wallet's
    /// sessions (x402's `exact` method `erc7710`, the wallet being the delegator). A permission
    /// context is a `PaymentIntent` signed by the session key, without its payee and amount
    /// (`sessionId ‖ purpose ‖ nonce ‖ deadline ‖ signature`, packed); its execution, ERC-7579
    /// single-call data (`target ‖ value ‖ callData`, packed) of the session token's
    /// `transfer(to, amount)`. Redeeming one is the wallet's `pay` of that intent: every rule of
    /// the session holds at redemption, and the token moves from the wallet to `to` in this
    /// transaction. Anyone may redeem (the signature binds payee and amount); all or nothing.
    ///
    /// # Errors
    /// * [`GatewayInvalidParameter`]`(Delegation)` — arrays of different lengths, a mode other
    ///   than `bytes32(0)` (single call, default), a context too short.
    /// * [`GatewayInvalidParameter`]`(Execution)` — not a value-less `transfer` of the
    ///   session's token (an unknown session has none).
    /// * [`GatewayDelegationNeedsApproval`] — above the session's co-sign threshold.
    /// * [`GatewayWalletCallFailed`] — the wallet refused, its custom error as `reason`
    ///   (`WalletNonceUsed` for a redeemed one, `WalletInvalidSignature`,
    ///   `WalletPaymentCapExceeded`…).
    /// * [`GatewayNotBound`].
    ///
    /// # Events
    /// The wallet's `PaymentExecuted` with its receipt, and the token's `Transfer`.
    pub fn redeem_delegations(
        &mut self,
        permission_contexts: Vec<Bytes>,
        modes: Vec<B256>,
        execution_call_datas: Vec<Bytes>,
    ) -> Result<()> {
        let wallet = self.bound_wallet()?;
        let n = modes.len();
        if permission_contexts.len() != n || execution_call_datas.len() != n {
            return Err(invalid(InvalidParameter::Delegation));
        }
        for ((context, mode), execution) in permission_contexts
            .iter()
            .zip(&modes)
            .zip(&execution_call_datas)
        {
            if !mode.is_zero() || context.len() < 4 * 32 {
                return Err(invalid(InvalidParameter::Delegation));
            }
            self.redeem(wallet, context, execution)?;
        }
        Ok(())
    }

    /// The SessionWallet this gateway serves (zero until bound).
    pub fn wallet(&self) -> Address {
        self.wallet.get()
    }

    /// Whether `owner` has used `nonce` for a `PendingDecision` (an `OpenSession`'s nonce is
    /// used when the wallet has a session under `sessionId(owner, nonce)`).
    pub fn is_owner_nonce_used(&self, owner: Address, nonce: U256) -> bool {
        nonce::is_used(&self.nonces.getter(owner), nonce)
    }

    /// The EIP-712 domain separator ("Bursar Session Gateway", "1", chain id, this address).
    pub fn domain_separator(&self) -> B256 {
        domain_separator(
            self.vm(),
            SESSION_GATEWAY_DOMAIN.name_hash,
            SESSION_GATEWAY_DOMAIN.version_hash,
        )
    }
}

impl SessionGateway {
    fn bound_wallet(&self) -> Result<Address> {
        let wallet = self.wallet.get();
        if wallet.is_zero() {
            return Err(GatewayNotBound {}.into());
        }
        Ok(wallet)
    }

    /// Checks the deadline, uses the owner's nonce and verifies the owner's signature of the
    /// struct whose words (typehash first) are `message`.
    fn authorize(
        &mut self,
        owner: Address,
        message: &[Word],
        n: U256,
        deadline: U256,
        signature: &[u8],
    ) -> Result<()> {
        if !nonce::consume(&mut self.nonces.setter(owner), n) {
            return Err(GatewayNonceUsed { nonce: n }.into());
        }
        self.verify(owner, message, deadline, signature)
    }

    /// Checks the deadline and verifies the owner's signature of the struct whose words
    /// (typehash first) are `message`.
    fn verify(
        &self,
        owner: Address,
        message: &[Word],
        deadline: U256,
        signature: &[u8],
    ) -> Result<()> {
        if U256::from(self.vm().block_timestamp()) > deadline {
            return Err(GatewayDeadlinePassed { deadline }.into());
        }
        let digest = typed_data_hash(self.domain_separator(), hash_words(message));
        if !signature::is_valid(self.vm(), owner, digest, signature) {
            return Err(GatewayInvalidSignature {}.into());
        }
        Ok(())
    }

    /// The owner of the session a pending payment belongs to, asked of the wallet.
    fn pending_owner(&self, wallet: Address, pending_id: U256) -> Result<Address> {
        let pending = self.view(
            wallet,
            &calldata::encode(
                ISessionWallet::pendingPaymentCall::SELECTOR,
                &[word(pending_id)],
            ),
        );
        // (sessionId, to, amount, purpose, nonce, expiresAt, status): status 0 = unknown.
        if pending.len() != 7 * 32 || pending[7 * 32 - 1] == 0 {
            return Err(GatewayUnknownPending {
                pendingId: pending_id,
            }
            .into());
        }
        let authority = self.view(
            wallet,
            &calldata::encode(
                ISessionWallet::sessionAuthorityCall::SELECTOR,
                &[pending[..32].try_into().expect("32 bytes")],
            ),
        );
        if authority.len() < 32 {
            return Err(GatewayUnknownPending {
                pendingId: pending_id,
            }
            .into());
        }
        Ok(Address::from_slice(&authority[12..32]))
    }

    /// Pays the intent of one permission `context` (checked long enough) as its `execution`
    /// names it.
    fn redeem(&mut self, wallet: Address, context: &[u8], execution: &[u8]) -> Result<()> {
        // target (20) ‖ value (32) ‖ transfer(to, amount) (4 + 32 + 32).
        let (target, rest) = execution.split_at(20.min(execution.len()));
        let (value, transfer) = rest.split_at(32.min(rest.len()));
        let session: Word = context[..32].try_into().expect("32 bytes");
        let terms = self.view(
            wallet,
            &calldata::encode(ISessionWallet::sessionTermsCall::SELECTOR, &[session]),
        );
        // (owner, sessionKey, guardian, token, …): the token is the fourth word.
        let token = terms.get(3 * 32 + 12..4 * 32);
        if execution.len() != 20 + 32 + 68
            || value.iter().any(|b| *b != 0)
            || transfer[..4] != ITestToken::transferCall::SELECTOR
            || transfer[4..16].iter().any(|b| *b != 0)
            || token != Some(target)
            || target == token::NATIVE.as_slice()
        {
            return Err(invalid(InvalidParameter::Execution));
        }
        let word_at =
            |bytes: &[u8], at: usize| -> Word { bytes[at..at + 32].try_into().expect("32 bytes") };
        // pay(sessionId, to, amount, purpose, nonce, deadline, signature).
        let head = [
            session,
            word_at(transfer, 4),
            word_at(transfer, 36),
            word_at(context, 32),
            word_at(context, 64),
            word_at(context, 96),
        ];
        let data = calldata::encode_with_bytes(
            ISessionWallet::payCall::SELECTOR,
            &head,
            &context[4 * 32..],
        );
        let executed = self.call_wallet(wallet, &data)?;
        if calldata::decode_word(&executed) != Some(U256::from(1)) {
            return Err(GatewayDelegationNeedsApproval {
                sessionId: U256::from_be_bytes(session),
            }
            .into());
        }
        Ok(())
    }

    fn view(&self, wallet: Address, data: &[u8]) -> Vec<u8> {
        call::view(self.vm(), wallet, data).unwrap_or_default()
    }

    fn call_wallet(&mut self, wallet: Address, data: &[u8]) -> Result<Vec<u8>> {
        call::call(self.vm(), wallet, data).map_err(|reason| {
            GatewayWalletCallFailed {
                reason: reason.into(),
            }
            .into()
        })
    }
}

fn invalid(parameter: InvalidParameter) -> GatewayError {
    GatewayInvalidParameter {
        parameter: parameter as u8,
    }
    .into()
}
