//! # ReceiptRegistry
//!
//! The on-chain record of what agents paid for and produced:
//! - *receipts*, written only by the SessionWallet for each payment and acknowledged by the
//!   payee with a response hash (a two-sided receipt);
//! - *provenance records*, EIP-712 signed by a session key and submitted by anyone. The attester
//!   recorded is the signer, never the submitter; records can be revoked by their attester or the
//!   session's owner, and `isValid` honours revocation.
//!
//! The ABI, events and errors are declared once in `bursar_bindings::receipts`.
#![cfg_attr(not(any(test, feature = "export-abi")), no_main)]
#![cfg_attr(not(any(test, feature = "export-abi")), no_std)]

#[macro_use]
extern crate alloc;

pub mod error;
pub mod provenance;
pub mod receipt;

use alloc::vec::Vec;

use alloy_primitives::{keccak256, Address, B256, U256, U64};
use alloy_sol_types::SolCall;
use bursar_bindings::{
    eip712::{PROVENANCE_RECORD_TYPEHASH, RECEIPT_REGISTRY_DOMAIN},
    receipts::{IReceiptRegistry::*, MAX_PARENTS},
    wallet::ISessionWallet,
};
use bursar_contract_common::{
    calldata,
    eip712::{domain_separator, hash_words, typed_data_hash},
    nonce, signature, word,
};
use stylus_sdk::{call::RawCall, prelude::*, storage::*};

pub use error::RegistryError;
use provenance::Record;
use receipt::Receipt;

type Result<T, E = RegistryError> = core::result::Result<T, E>;

#[storage]
#[entrypoint]
pub struct ReceiptRegistry {
    admin: StorageAddress,
    wallet: StorageAddress,
    receipt_count: StorageU256,
    provenance_count: StorageU256,
    receipts: StorageMap<U256, Receipt>,
    records: StorageMap<U256, Record>,
    /// Attester (session key) nonces: an unordered bitmap each.
    nonces: StorageMap<Address, StorageMap<U256, StorageU256>>,
}

#[public]
impl ReceiptRegistry {
    /// Sets the admin, who wires the registry to its wallet (deployed through StylusDeployer).
    ///
    /// # Errors
    /// * `RegistryInvalidAddress` — `admin` is zero.
    #[constructor]
    pub fn constructor(&mut self, admin: Address) -> Result<()> {
        nonzero(admin)?;
        self.admin.set(admin);
        Ok(())
    }

    pub fn admin(&self) -> Address {
        self.admin.get()
    }

    /// The SessionWallet allowed to write receipts.
    pub fn wallet(&self) -> Address {
        self.wallet.get()
    }

    /// Authorises `wallet` as the only receipt writer (admin only).
    ///
    /// # Errors
    /// * `RegistryUnauthorized` — the caller is not the admin.
    /// * `RegistryInvalidAddress` — `wallet` is zero.
    ///
    /// # Events
    /// `WalletSet`.
    pub fn set_wallet(&mut self, wallet: Address) -> Result<()> {
        self.only_admin()?;
        nonzero(wallet)?;
        self.wallet.set(wallet);
        self.vm().log(WalletSet { wallet });
        Ok(())
    }

    /// Hands the admin role to `new_admin` (admin only).
    ///
    /// # Errors
    /// * `RegistryUnauthorized`, `RegistryInvalidAddress`.
    ///
    /// # Events
    /// `AdminTransferred`.
    pub fn transfer_admin(&mut self, new_admin: Address) -> Result<()> {
        let previous = self.only_admin()?;
        nonzero(new_admin)?;
        self.admin.set(new_admin);
        self.vm().log(AdminTransferred {
            previousAdmin: previous,
            newAdmin: new_admin,
        });
        Ok(())
    }

    /// Writes the receipt of a payment the wallet just made. Returns its id (from 1).
    ///
    /// # Errors
    /// * `RegistryUnauthorized` — the caller is not the wallet.
    ///
    /// # Events
    /// `ReceiptRecorded`.
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
        let mut r = self.receipts.setter(id);
        r.session_id.set(session_id);
        r.payer.set(payer);
        r.payee.set(payee);
        r.token.set(token);
        r.amount.set(amount);
        r.purpose.set(purpose);
        r.timestamp.set(U64::from(timestamp));
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

    /// The payee confirms a receipt with a hash of its response (invoice, delivery, result).
    ///
    /// # Errors
    /// * `ReceiptUnknown`, `ReceiptAlreadyAcknowledged`.
    /// * `RegistryUnauthorized` — the caller is not the payee.
    ///
    /// # Events
    /// `ReceiptAcknowledged`.
    pub fn acknowledge(&mut self, receipt_id: U256, response_hash: B256) -> Result<()> {
        let caller = self.vm().msg_sender();
        let now = self.vm().block_timestamp();
        let mut r = self.receipts.setter(receipt_id);
        let payee = r.payee.get();
        if payee.is_zero() {
            return Err(ReceiptUnknown {
                receiptId: receipt_id,
            }
            .into());
        }
        if caller != payee {
            return Err(RegistryUnauthorized { caller }.into());
        }
        if r.acknowledged_at.get() != U64::ZERO {
            return Err(ReceiptAlreadyAcknowledged {
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

    /// `(sessionId, payer, payee, token, amount, purpose, timestamp, acknowledgedAt,
    /// responseHash)`; all zero for an unknown id.
    #[allow(clippy::type_complexity)]
    pub fn get_receipt(
        &self,
        receipt_id: U256,
    ) -> (U256, Address, Address, Address, U256, B256, u64, u64, B256) {
        let r = self.receipts.getter(receipt_id);
        (
            r.session_id.get(),
            r.payer.get(),
            r.payee.get(),
            r.token.get(),
            r.amount.get(),
            r.purpose.get(),
            r.timestamp.get().to(),
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
    /// * `ProvenanceDeadlinePassed`, `ProvenanceInvalidSignature`, `ProvenanceWrongSigner`,
    ///   `ProvenanceNonceUsed`.
    /// * `ProvenanceSessionInactive` — unknown, revoked, closed, expired or lapsed session.
    /// * `ProvenanceTooManyParents`, `ProvenanceUnknownParent`.
    ///
    /// # Events
    /// `ProvenanceRecorded`.
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
        for parent in &parents {
            if parent.is_zero() || *parent > count {
                return Err(ProvenanceUnknownParent { parentId: *parent }.into());
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

    /// Revokes a record: by its attester or by the owner of its session. `reason` is a hash
    /// (or short code) of why.
    ///
    /// # Errors
    /// * `ProvenanceUnknown`, `ProvenanceAlreadyRevoked`, `RegistryUnauthorized`.
    ///
    /// # Events
    /// `ProvenanceRevoked`.
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
        if caller != attester && caller != self.session_authority(session_id).0 {
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
    /// Returns the admin if the caller is the admin.
    fn only_admin(&self) -> Result<Address> {
        let caller = self.vm().msg_sender();
        let admin = self.admin.get();
        if caller != admin {
            return Err(RegistryUnauthorized { caller }.into());
        }
        Ok(admin)
    }

    /// Asks the wallet `sessionAuthority(sessionId)`: `(owner, sessionKey, active)`. A wallet
    /// that is unset or answers badly yields nobody and inactive.
    fn session_authority(&self, session_id: U256) -> (Address, Address, bool) {
        let data = calldata::encode(
            ISessionWallet::sessionAuthorityCall::SELECTOR,
            &[word(session_id)],
        );
        let wallet = self.wallet.get();
        let out = unsafe {
            RawCall::new_static(self.vm())
                .flush_storage_cache()
                .call(wallet, &data)
        }
        .unwrap_or_default();
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

fn nonzero(account: Address) -> Result<()> {
    if account.is_zero() {
        return Err(RegistryInvalidAddress { account }.into());
    }
    Ok(())
}
