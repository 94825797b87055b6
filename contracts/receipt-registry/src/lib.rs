//! # ReceiptRegistry
//!
//! The on-chain record of what agents paid for and produced:
//! - *receipts*, written only by the SessionWallet for each payment and acknowledged by the
//!   payee with a response hash (a two-sided receipt). A receipt is stored as one word, the
//!   commitment `keccak256(abi.encode(sessionId, payer, payee, token, amount, purpose,
//!   timestamp))`; the fields themselves are in `ReceiptRecorded`. One slot instead of six keeps
//!   a payment under 194k gas, and proves as much: nobody can present other fields for a
//!   receipt id without breaking keccak, and `verifyReceipt` checks a claimed receipt on chain;
//!
//! The registry is bound once, by the binder named at construction, to the wallet that names
//! it; nobody holds any power over the record after that.
//! - *provenance records*, EIP-712 signed by a session key and submitted by anyone. The attester
//!   recorded is the signer, never the submitter; records can be revoked by their attester or the
//!   session's owner, and `isValid` honours revocation;
//! - *feedback backed by payment*: ERC-8004 feedback this registry gives, as the client, for one
//!   side of one receipt on the agent at the other side (`feedback.rs` says what is checked).
//!
//! The ABI, events and errors are declared once in `bursar_bindings::receipts`.
#![cfg_attr(not(any(test, feature = "export-abi")), no_main)]
#![cfg_attr(not(any(test, feature = "export-abi")), no_std)]
// `#[public]` generates an undocumented `print_from_args` for `export-abi`; the lints run
// without that feature too (`cargo xtask test`), where every public item needs docs.
#![cfg_attr(feature = "export-abi", allow(missing_docs))]

#[macro_use]
extern crate alloc;

pub mod error;
pub mod feedback;
pub mod provenance;
pub mod receipt;

use alloc::string::String;
use alloc::vec::Vec;

use alloy_primitives::{keccak256, Address, B256, U256, U64};
use alloy_sol_types::SolCall;
use bursar_bindings::{
    eip712::{PROVENANCE_RECORD_TYPEHASH, RECEIPT_REGISTRY_DOMAIN},
    receipts::{IReceiptRegistry::*, MAX_PARENTS},
    wallet::ISessionWallet,
};
use bursar_contract_common::{
    call, calldata,
    eip712::{domain_separator, hash_words, typed_data_hash},
    nonce, signature, word,
};
use stylus_sdk::{prelude::*, storage::*};

pub use error::RegistryError;
use provenance::Record;
use receipt::Receipt;

type Result<T, E = RegistryError> = core::result::Result<T, E>;

/// The registry's storage: receipts and provenance records by id, and the one wallet whose
/// payments it records.
#[storage]
#[entrypoint]
pub struct ReceiptRegistry {
    /// May call `bind`, once; cleared when it does.
    binder: StorageAddress,
    wallet: StorageAddress,
    receipt_count: StorageU256,
    provenance_count: StorageU256,
    receipts: StorageMap<U256, Receipt>,
    records: StorageMap<U256, Record>,
    /// Attester (session key) nonces: an unordered bitmap each.
    nonces: StorageMap<Address, StorageMap<U256, StorageU256>>,
    /// ERC-8004's registries on this chain (zero where it has none: no feedback then).
    identity_registry: StorageAddress,
    reputation_registry: StorageAddress,
}

#[public]
impl ReceiptRegistry {
    /// Names the one account that may bind the registry to its wallet (the deployer: contracts
    /// deployed through StylusDeployer see the deployer contract as their sender), and ERC-8004's
    /// Identity and Reputation registries on this chain (zero where there are none).
    ///
    /// # Errors
    /// * [`RegistryUnauthorized`]`(0)` — `binder` is zero.
    #[constructor]
    pub fn constructor(
        &mut self,
        binder: Address,
        identity_registry: Address,
        reputation_registry: Address,
    ) -> Result<()> {
        if binder.is_zero() {
            return Err(RegistryUnauthorized { caller: binder }.into());
        }
        self.binder.set(binder);
        self.identity_registry.set(identity_registry);
        self.reputation_registry.set(reputation_registry);
        Ok(())
    }

    /// The SessionWallet allowed to write receipts (zero until bound).
    pub fn wallet(&self) -> Address {
        self.wallet.get()
    }

    /// Binds the registry to `wallet`, once, by the binder, and only if
    /// `wallet.receiptRegistry()` is this registry. From then on only that wallet writes
    /// receipts, and nobody can change it.
    ///
    /// # Errors
    /// * [`RegistryAlreadyBound`] — bound before.
    /// * [`RegistryUnauthorized`] — the caller is not the binder.
    /// * [`RegistryWalletMismatch`] — `wallet` does not name this registry.
    ///
    /// # Events
    /// [`WalletBound`].
    pub fn bind(&mut self, wallet: Address) -> Result<()> {
        let bound = self.wallet.get();
        if !bound.is_zero() {
            return Err(RegistryAlreadyBound { wallet: bound }.into());
        }
        let caller = self.vm().msg_sender();
        if caller != self.binder.get() {
            return Err(RegistryUnauthorized { caller }.into());
        }
        if !call::names_this_contract(
            self.vm(),
            wallet,
            ISessionWallet::receiptRegistryCall::SELECTOR,
        ) {
            return Err(RegistryWalletMismatch { wallet }.into());
        }
        self.wallet.set(wallet);
        self.binder.set(Address::ZERO);
        self.vm().log(WalletBound { wallet });
        Ok(())
    }

    /// Writes the receipt of a payment the wallet just made: its commitment on chain, its
    /// fields in the event. Returns its id (from 1).
    ///
    /// # Errors
    /// * [`RegistryUnauthorized`] — the caller is not the wallet.
    ///
    /// # Events
    /// [`ReceiptRecorded`].
    pub fn record_receipt(
        &mut self,
        session_id: U256,
        payer: Address,
        payee: Address,
        token: Address,
        amount: U256,
        purpose: B256,
    ) -> Result<U256> {
        let caller = self.vm().msg_sender();
        if caller != self.wallet.get() {
            return Err(RegistryUnauthorized { caller }.into());
        }
        let timestamp = self.vm().block_timestamp();
        let id = self.receipt_count.get() + U256::from(1);
        self.receipt_count.set(id);
        let commitment = commitment(session_id, payer, payee, token, amount, purpose, timestamp);
        self.receipts.setter(id).commitment.set(commitment);
        self.vm().log(ReceiptRecorded {
            receiptId: id,
            sessionId: session_id,
            payee,
            payer,
            token,
            amount,
            purpose,
            timestamp,
        });
        Ok(id)
    }

    /// The payee confirms a receipt with a hash of its response (invoice, delivery, result),
    /// restating the receipt as `ReceiptRecorded` announced it (the payee is the caller).
    ///
    /// # Errors
    /// * [`ReceiptUnknown`], [`ReceiptAlreadyAcknowledged`].
    /// * [`ReceiptMismatch`] — the fields, with the caller as payee, are not the receipt's: the
    ///   caller is not the payee, or misquoted it.
    ///
    /// # Events
    /// [`ReceiptAcknowledged`].
    #[allow(clippy::too_many_arguments)]
    pub fn acknowledge(
        &mut self,
        receipt_id: U256,
        session_id: U256,
        payer: Address,
        token: Address,
        amount: U256,
        purpose: B256,
        timestamp: u64,
        response_hash: B256,
    ) -> Result<()> {
        let payee = self.vm().msg_sender();
        let now = self.vm().block_timestamp();
        let mut r = self.receipts.setter(receipt_id);
        let stored = r.commitment.get();
        if stored.is_zero() {
            return Err(ReceiptUnknown {
                receiptId: receipt_id,
            }
            .into());
        }
        if stored != commitment(session_id, payer, payee, token, amount, purpose, timestamp) {
            return Err(ReceiptMismatch {
                receiptId: receipt_id,
            }
            .into());
        }
        if r.acknowledged_at.get() != U64::ZERO {
            return Err(ReceiptAlreadyAcknowledged {
                receiptId: receipt_id,
            }
            .into());
        }
        if r.released_at.get() != U64::ZERO {
            return Err(ReceiptWasReleased {
                receiptId: receipt_id,
            }
            .into());
        }
        r.acknowledged_at.set(U64::from(now));
        r.response_hash.set(response_hash);
        self.vm().log(ReceiptAcknowledged {
            receiptId: receipt_id,
            payee,
            responseHash: response_hash,
        });
        Ok(())
    }

    /// Marks a receipt released: the wallet reserved an authorization for a third party to
    /// settle, and it expired unused, so nothing was paid. The receipt stays (it records what
    /// the session's rules admitted); it can no longer be acknowledged.
    ///
    /// # Errors
    /// * [`RegistryUnauthorized`] — the caller is not the wallet.
    /// * [`ReceiptUnknown`], [`ReceiptWasReleased`].
    ///
    /// # Events
    /// [`ReceiptReleased`].
    pub fn release_receipt(&mut self, receipt_id: U256) -> Result<()> {
        let caller = self.vm().msg_sender();
        if caller != self.wallet.get() {
            return Err(RegistryUnauthorized { caller }.into());
        }
        let now = self.vm().block_timestamp();
        let mut r = self.receipts.setter(receipt_id);
        if r.commitment.get().is_zero() {
            return Err(ReceiptUnknown {
                receiptId: receipt_id,
            }
            .into());
        }
        if r.released_at.get() != U64::ZERO {
            return Err(ReceiptWasReleased {
                receiptId: receipt_id,
            }
            .into());
        }
        r.released_at.set(U64::from(now));
        self.vm().log(ReceiptReleased {
            receiptId: receipt_id,
        });
        Ok(())
    }

    /// When the wallet released receipt `receiptId` (0: not released, or no such receipt).
    pub fn receipt_released_at(&self, receipt_id: U256) -> u64 {
        self.receipts.getter(receipt_id).released_at.get().to()
    }

    /// Whether receipt `receiptId` is exactly this payment.
    #[allow(clippy::too_many_arguments)]
    pub fn verify_receipt(
        &self,
        receipt_id: U256,
        session_id: U256,
        payer: Address,
        payee: Address,
        token: Address,
        amount: U256,
        purpose: B256,
        timestamp: u64,
    ) -> bool {
        let stored = self.receipts.getter(receipt_id).commitment.get();
        !stored.is_zero()
            && stored == commitment(session_id, payer, payee, token, amount, purpose, timestamp)
    }

    /// `(commitment, acknowledgedAt, responseHash)`; all zero for an unknown id.
    pub fn get_receipt(&self, receipt_id: U256) -> (B256, u64, B256) {
        let r = self.receipts.getter(receipt_id);
        (
            r.commitment.get(),
            r.acknowledged_at.get().to(),
            r.response_hash.get(),
        )
    }

    /// Number of receipts; ids run from 1 to this.
    pub fn receipt_count(&self) -> U256 {
        self.receipt_count.get()
    }

    /// Records provenance for an artifact, on the strength of the session key's EIP-712
    /// `ProvenanceRecord` signature; anyone may submit it. The session must be live and the
    /// signer must be its key. `parents` are earlier record ids (lineage). Returns the id.
    ///
    /// # Errors
    /// * [`ProvenanceDeadlinePassed`], [`ProvenanceInvalidSignature`], [`ProvenanceWrongSigner`],
    ///   [`ProvenanceNonceUsed`].
    /// * [`ProvenanceSessionInactive`] — unknown, revoked, closed, expired or lapsed session.
    /// * [`ProvenanceTooManyParents`], [`ProvenanceUnknownParent`],
    ///   [`ProvenanceDuplicateParent`], [`ProvenanceParentRevoked`] — lineage must name each
    ///   parent once, and only records that are still valid.
    ///
    /// # Events
    /// [`ProvenanceRecorded`].
    #[allow(clippy::too_many_arguments)]
    pub fn record_provenance(
        &mut self,
        session_id: U256,
        subject: B256,
        inputs: B256,
        runtime: B256,
        policy: B256,
        uri: B256,
        parents: Vec<U256>,
        nonce: U256,
        deadline: U256,
        signature: stylus_sdk::abi::Bytes,
    ) -> Result<U256> {
        let now = self.vm().block_timestamp();
        if U256::from(now) > deadline {
            return Err(ProvenanceDeadlinePassed { deadline }.into());
        }
        if parents.len() > MAX_PARENTS {
            return Err(ProvenanceTooManyParents {
                count: U256::from(parents.len()),
                max: U256::from(MAX_PARENTS),
            }
            .into());
        }
        let count = self.provenance_count.get();
        let mut parents_preimage = Vec::with_capacity(32 * parents.len());
        for (i, parent) in parents.iter().enumerate() {
            if parent.is_zero() || *parent > count {
                return Err(ProvenanceUnknownParent { parentId: *parent }.into());
            }
            if parents[..i].contains(parent) {
                return Err(ProvenanceDuplicateParent { parentId: *parent }.into());
            }
            if self.records.getter(*parent).revoked.get() {
                return Err(ProvenanceParentRevoked { parentId: *parent }.into());
            }
            parents_preimage.extend_from_slice(&word(*parent));
        }
        let digest = typed_data_hash(
            self.domain_separator(),
            hash_words(&[
                word(PROVENANCE_RECORD_TYPEHASH),
                word(session_id),
                word(subject),
                word(inputs),
                word(runtime),
                word(policy),
                word(uri),
                word(keccak256(&parents_preimage)),
                word(nonce),
                word(deadline),
            ]),
        );
        let attester = signature::recover(self.vm(), digest, &signature)
            .ok_or(ProvenanceInvalidSignature {})?;
        let (_, session_key, active) = self.session_authority(session_id);
        if !active {
            return Err(ProvenanceSessionInactive {
                sessionId: session_id,
            }
            .into());
        }
        if attester != session_key {
            return Err(ProvenanceWrongSigner {
                signer: attester,
                expected: session_key,
            }
            .into());
        }
        if !nonce::consume(&mut self.nonces.setter(attester), nonce) {
            return Err(ProvenanceNonceUsed { attester, nonce }.into());
        }
        let id = count + U256::from(1);
        self.provenance_count.set(id);
        let mut r = self.records.setter(id);
        r.session_id.set(session_id);
        r.attester.set(attester);
        r.timestamp.set(U64::from(now));
        r.subject.set(subject);
        r.inputs.set(inputs);
        r.runtime.set(runtime);
        r.policy.set(policy);
        r.uri.set(uri);
        for parent in &parents {
            r.parents.push(*parent);
        }
        self.vm().log(ProvenanceRecorded {
            recordId: id,
            sessionId: session_id,
            attester,
            subject,
            inputs,
            runtime,
            policy,
            uri,
            parents,
        });
        Ok(id)
    }

    /// Revokes a record: by the owner of its session at any time, or by its attester (the
    /// session key) while the session is active — a key that leaks after its sandbox is gone
    /// cannot rewrite the sandbox's history. `reason` is a hash (or short code) of why.
    ///
    /// # Errors
    /// * [`ProvenanceUnknown`], [`ProvenanceAlreadyRevoked`].
    /// * [`RegistryUnauthorized`] — neither the owner, nor the attester of an active session.
    ///
    /// # Events
    /// [`ProvenanceRevoked`].
    pub fn revoke_provenance(&mut self, record_id: U256, reason: B256) -> Result<()> {
        let caller = self.vm().msg_sender();
        let (session_id, attester, revoked) = {
            let r = self.records.getter(record_id);
            (r.session_id.get(), r.attester.get(), r.revoked.get())
        };
        if attester.is_zero() {
            return Err(ProvenanceUnknown {
                recordId: record_id,
            }
            .into());
        }
        if revoked {
            return Err(ProvenanceAlreadyRevoked {
                recordId: record_id,
            }
            .into());
        }
        let (owner, _, active) = self.session_authority(session_id);
        if caller != owner && !(caller == attester && active) {
            return Err(RegistryUnauthorized { caller }.into());
        }
        self.records.setter(record_id).revoked.set(true);
        self.vm().log(ProvenanceRevoked {
            recordId: record_id,
            by: caller,
            reason,
        });
        Ok(())
    }

    /// Whether the record exists and has not been revoked.
    pub fn is_valid(&self, record_id: U256) -> bool {
        let r = self.records.getter(record_id);
        !r.attester.get().is_zero() && !r.revoked.get()
    }

    /// `(sessionId, attester, subject, inputs, runtime, policy, uri, timestamp, revoked)`; all
    /// zero for an unknown id.
    #[allow(clippy::type_complexity)]
    pub fn get_provenance(
        &self,
        record_id: U256,
    ) -> (U256, Address, B256, B256, B256, B256, B256, u64, bool) {
        let r = self.records.getter(record_id);
        (
            r.session_id.get(),
            r.attester.get(),
            r.subject.get(),
            r.inputs.get(),
            r.runtime.get(),
            r.policy.get(),
            r.uri.get(),
            r.timestamp.get().to(),
            r.revoked.get(),
        )
    }

    /// The parent record ids of a record.
    pub fn provenance_parents(&self, record_id: U256) -> Vec<U256> {
        let r = self.records.getter(record_id);
        (0..r.parents.len())
            .filter_map(|i| r.parents.get(i))
            .collect()
    }

    /// Number of provenance records; ids run from 1 to this.
    pub fn provenance_count(&self) -> U256 {
        self.provenance_count.get()
    }

    /// Whether `attester` has used `nonce`.
    pub fn is_provenance_nonce_used(&self, attester: Address, nonce: U256) -> bool {
        nonce::is_used(&self.nonces.getter(attester), nonce)
    }

    /// ERC-8004's Identity Registry this registry's feedback names agents in (zero: none).
    pub fn identity_registry(&self) -> Address {
        self.identity_registry.get()
    }

    /// ERC-8004's Reputation Registry this registry gives feedback to (zero: none).
    pub fn reputation_registry(&self) -> Address {
        self.reputation_registry.get()
    }

    /// Gives ERC-8004 feedback on an agent for one side of a receipt, on the strength of that
    /// side's EIP-712 `ReceiptFeedback` signature; anyone may submit it. The receipt is quoted
    /// whole. By the payer (`byPayee` false; signed by the session's key or the paying owner)
    /// the agent rated must be the payee's; by the payee, the payer's — an agent is its owner or
    /// its `agentWallet`. This registry is the feedback's client and its `feedbackHash` is the
    /// receipt's commitment. Returns the feedback's index.
    ///
    /// # Errors
    /// * [`FeedbackUnavailable`] — this chain has no ERC-8004 registries.
    /// * [`FeedbackDeadlinePassed`], [`FeedbackWrongSigner`].
    /// * [`ReceiptUnknown`], [`ReceiptMismatch`] — no such receipt, or misquoted.
    /// * [`ReceiptWasReleased`] — nothing was paid.
    /// * [`FeedbackAlreadyGiven`] — this side rated this receipt before (revoked or not).
    /// * [`FeedbackNotTheAgent`] — the other side is neither the agent's owner nor its wallet
    ///   (or there is no such agent).
    /// * [`FeedbackSelfDealing`] — the giver or its side is the agent's owner or wallet.
    /// * [`FeedbackRefused`] — the Reputation Registry's refusal (its revert data).
    ///
    /// # Events
    /// [`ReceiptFeedbackGiven`], after the Reputation Registry's `NewFeedback`.
    #[allow(clippy::too_many_arguments)]
    pub fn give_receipt_feedback(
        &mut self,
        receipt_id: U256,
        session_id: U256,
        payer: Address,
        payee: Address,
        token: Address,
        amount: U256,
        purpose: B256,
        timestamp: u64,
        by_payee: bool,
        agent_id: U256,
        value: i128,
        value_decimals: u8,
        tag1: String,
        tag2: String,
        endpoint: String,
        feedback_uri: String,
        deadline: U256,
        signature: stylus_sdk::abi::Bytes,
    ) -> Result<u64> {
        let receipt = feedback::Quoted {
            id: receipt_id,
            session_id,
            payer,
            payee,
            token,
            amount,
            purpose,
            timestamp,
        };
        let rating = feedback::Rating {
            by_payee,
            agent_id,
            value,
            value_decimals,
            tag1,
            tag2,
            endpoint,
            feedback_uri,
        };
        self.give_feedback(receipt, rating, deadline, &signature)
    }

    /// Revokes one side's feedback on a receipt, on the strength of its giver's EIP-712
    /// `RevokeReceiptFeedback` signature; anyone may submit it.
    ///
    /// # Errors
    /// * [`FeedbackUnavailable`], [`FeedbackDeadlinePassed`].
    /// * [`FeedbackUnknown`] — this side gave none, or revoked it already.
    /// * [`FeedbackWrongSigner`] — not signed by the feedback's giver.
    /// * [`FeedbackRefused`] — the Reputation Registry's refusal.
    ///
    /// # Events
    /// [`ReceiptFeedbackRevoked`], after the Reputation Registry's `FeedbackRevoked`.
    pub fn revoke_receipt_feedback(
        &mut self,
        receipt_id: U256,
        by_payee: bool,
        deadline: U256,
        signature: stylus_sdk::abi::Bytes,
    ) -> Result<()> {
        self.revoke_feedback(receipt_id, by_payee, deadline, &signature)
    }

    /// One side's feedback on a receipt: `(agentId, feedbackIndex, giver, revoked)`; index 0
    /// when it gave none.
    pub fn receipt_feedback(&self, receipt_id: U256, by_payee: bool) -> (U256, u64, Address, bool) {
        self.feedback_of(receipt_id, by_payee)
    }

    /// The EIP-712 domain separator ("Bursar Receipt Registry", "1", chain id, this address).
    pub fn domain_separator(&self) -> B256 {
        domain_separator(
            self.vm(),
            RECEIPT_REGISTRY_DOMAIN.name_hash,
            RECEIPT_REGISTRY_DOMAIN.version_hash,
        )
    }
}

impl ReceiptRegistry {
    /// Asks the wallet `sessionAuthority(sessionId)`: `(owner, sessionKey, active)`. A wallet
    /// that is unset or answers badly yields nobody and inactive.
    fn session_authority(&self, session_id: U256) -> (Address, Address, bool) {
        let data = calldata::encode(
            ISessionWallet::sessionAuthorityCall::SELECTOR,
            &[word(session_id)],
        );
        let wallet = self.wallet.get();
        let out = call::view(self.vm(), wallet, &data).unwrap_or_default();
        if wallet.is_zero() || out.len() != 96 {
            return (Address::ZERO, Address::ZERO, false);
        }
        (
            Address::from_slice(&out[12..32]),
            Address::from_slice(&out[44..64]),
            out[95] == 1,
        )
    }
}

/// The word a receipt is stored as: `keccak256(abi.encode(sessionId, payer, payee, token,
/// amount, purpose, timestamp))` (`bursar_bindings::receipts::receipt_commitment` off chain).
fn commitment(
    session_id: U256,
    payer: Address,
    payee: Address,
    token: Address,
    amount: U256,
    purpose: B256,
    timestamp: u64,
) -> B256 {
    hash_words(&[
        word(session_id),
        word(payer),
        word(payee),
        word(token),
        word(amount),
        word(purpose),
        word(timestamp),
    ])
}
