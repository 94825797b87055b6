//! Feedback backed by payment: ERC-8004 feedback that this registry gives, as the client, for
//! one side of one receipt, on the strength of that side's EIP-712 signature.
//!
//! The Reputation Registry records the caller as a feedback's client, so every feedback given
//! here has this registry as its client, and `getSummary(agentId, [this registry], …)` is a
//! summary over paid-for feedback that any ERC-8004 client can ask for without trusting Bursar's
//! indexer. What makes it paid-for is checked here: the receipt is the one recorded and was not
//! released, the signer is its payer (the session's key or the paying owner) or its payee, the
//! rated agent is the other side (its owner or `agentWallet`), and the giver's side is not the
//! agent's own.

use alloc::string::String;
use alloc::vec::Vec;
use alloy_primitives::{keccak256, Address, B256, U256, U64};
use alloy_sol_types::SolCall;
use bursar_bindings::eip712::{RECEIPT_FEEDBACK_TYPEHASH, REVOKE_RECEIPT_FEEDBACK_TYPEHASH};
use bursar_bindings::erc8004::{IIdentityRegistry, IReputationRegistry};
use bursar_bindings::receipts::IReceiptRegistry::*;
use bursar_contract_common::abi::{encode_call, Arg};
use bursar_contract_common::eip712::{hash_words, typed_data_hash};
use bursar_contract_common::{call, calldata, signature, word, Word};
use stylus_sdk::{prelude::*, storage::*};

use crate::{commitment, ReceiptRegistry, Result};

/// The feedback one side of a receipt gave.
#[storage]
pub struct Given {
    /// The agent rated.
    pub agent_id: StorageU256,
    /// Its index among this registry's feedback on the agent (from 1; 0: none given).
    pub index: StorageU64,
    /// Whether the giver revoked it.
    pub revoked: StorageBool,
    /// Who signed it: the session key, the paying owner, or the payee.
    pub giver: StorageAddress,
}

/// A receipt as one of its sides quotes it (checked against the commitment).
pub(crate) struct Quoted {
    pub id: U256,
    pub session_id: U256,
    pub payer: Address,
    pub payee: Address,
    pub token: Address,
    pub amount: U256,
    pub purpose: B256,
    pub timestamp: u64,
}

/// What the giver says of the agent: ERC-8004's feedback fields but its hash.
pub(crate) struct Rating {
    pub by_payee: bool,
    pub agent_id: U256,
    pub value: i128,
    pub value_decimals: u8,
    pub tag1: String,
    pub tag2: String,
    pub endpoint: String,
    pub feedback_uri: String,
}

/// An `int128` as its sign-extended ABI word.
fn int_word(value: i128) -> Word {
    let mut w = [if value < 0 { 0xff } else { 0 }; 32];
    w[16..].copy_from_slice(&value.to_be_bytes());
    w
}

impl ReceiptRegistry {
    /// `giveReceiptFeedback` (see the interface).
    pub(crate) fn give_feedback(
        &mut self,
        receipt: Quoted,
        rating: Rating,
        deadline: U256,
        signature: &[u8],
    ) -> Result<u64> {
        let (identity, reputation) = self.agent_registries()?;
        if U256::from(self.vm().block_timestamp()) > deadline {
            return Err(FeedbackDeadlinePassed { deadline }.into());
        }
        let id = receipt.id;
        {
            let r = self.receipts.getter(id);
            let stored = r.commitment.get();
            if stored.is_zero() {
                return Err(ReceiptUnknown { receiptId: id }.into());
            }
            let quoted = commitment(
                receipt.session_id,
                receipt.payer,
                receipt.payee,
                receipt.token,
                receipt.amount,
                receipt.purpose,
                receipt.timestamp,
            );
            if stored != quoted {
                return Err(ReceiptMismatch { receiptId: id }.into());
            }
            if r.released_at.get() != U64::ZERO {
                return Err(ReceiptWasReleased { receiptId: id }.into());
            }
            let side = match rating.by_payee {
                true => &r.by_payee,
                false => &r.by_payer,
            };
            if side.index.get() != U64::ZERO {
                return Err(FeedbackAlreadyGiven {
                    receiptId: id,
                    byPayee: rating.by_payee,
                }
                .into());
            }
        }
        let digest = typed_data_hash(
            self.domain_separator(),
            hash_words(&[
                word(RECEIPT_FEEDBACK_TYPEHASH),
                word(id),
                word(rating.by_payee),
                word(rating.agent_id),
                int_word(rating.value),
                word(U256::from(rating.value_decimals)),
                word(keccak256(rating.tag1.as_bytes())),
                word(keccak256(rating.tag2.as_bytes())),
                word(keccak256(rating.endpoint.as_bytes())),
                word(keccak256(rating.feedback_uri.as_bytes())),
                word(deadline),
            ]),
        );
        let giver = self.giver(&receipt, rating.by_payee, digest, signature)?;

        // The rated agent is the other side; the giver's side is not the agent's.
        let (rated, rater) = match rating.by_payee {
            true => (receipt.payer, receipt.payee),
            false => (receipt.payee, receipt.payer),
        };
        let agent_id = rating.agent_id;
        let owner = self
            .address_view(identity, IIdentityRegistry::ownerOfCall::SELECTOR, agent_id)
            .unwrap_or_default();
        let wallet = self
            .address_view(
                identity,
                IIdentityRegistry::getAgentWalletCall::SELECTOR,
                agent_id,
            )
            .unwrap_or_default();
        let is_agent = |a: Address| !a.is_zero() && (a == owner || a == wallet);
        if !is_agent(rated) {
            return Err(FeedbackNotTheAgent {
                agentId: agent_id,
                account: rated,
            }
            .into());
        }
        if is_agent(rater) || is_agent(giver) {
            return Err(FeedbackSelfDealing { agentId: agent_id }.into());
        }

        let last = call::view(
            self.vm(),
            reputation,
            &calldata::encode(
                IReputationRegistry::getLastIndexCall::SELECTOR,
                &[word(agent_id), word(self.vm().contract_address())],
            ),
        )
        .filter(|out| out.len() == 32)
        .map_or(0, |out| U256::from_be_slice(&out).saturating_to::<u64>());
        let index = last + 1;
        {
            let mut r = self.receipts.setter(id);
            let side = match rating.by_payee {
                true => &mut r.by_payee,
                false => &mut r.by_payer,
            };
            side.agent_id.set(agent_id);
            side.index.set(U64::from(index));
            side.giver.set(giver);
        }
        let data = encode_call(
            IReputationRegistry::giveFeedbackCall::SELECTOR,
            &[
                Arg::Word(word(agent_id)),
                Arg::Word(int_word(rating.value)),
                Arg::Word(word(U256::from(rating.value_decimals))),
                Arg::Bytes(rating.tag1.as_bytes()),
                Arg::Bytes(rating.tag2.as_bytes()),
                Arg::Bytes(rating.endpoint.as_bytes()),
                Arg::Bytes(rating.feedback_uri.as_bytes()),
                Arg::Word(word(self.receipts.getter(id).commitment.get())),
            ],
        );
        call::call(self.vm(), reputation, &data).map_err(refused)?;
        self.vm().log(ReceiptFeedbackGiven {
            receiptId: id,
            agentId: agent_id,
            byPayee: rating.by_payee,
            giver,
            feedbackIndex: index,
        });
        Ok(index)
    }

    /// `revokeReceiptFeedback` (see the interface).
    pub(crate) fn revoke_feedback(
        &mut self,
        receipt_id: U256,
        by_payee: bool,
        deadline: U256,
        signature: &[u8],
    ) -> Result<()> {
        let (_, reputation) = self.agent_registries()?;
        if U256::from(self.vm().block_timestamp()) > deadline {
            return Err(FeedbackDeadlinePassed { deadline }.into());
        }
        let (agent_id, index, giver, revoked) = self.feedback_of(receipt_id, by_payee);
        if index == 0 || revoked {
            return Err(FeedbackUnknown {
                receiptId: receipt_id,
                byPayee: by_payee,
            }
            .into());
        }
        let digest = typed_data_hash(
            self.domain_separator(),
            hash_words(&[
                word(REVOKE_RECEIPT_FEEDBACK_TYPEHASH),
                word(receipt_id),
                word(by_payee),
                word(deadline),
            ]),
        );
        if !signature::is_valid(self.vm(), giver, digest, signature) {
            let signer = signature::recover(self.vm(), digest, signature).unwrap_or_default();
            return Err(FeedbackWrongSigner { signer }.into());
        }
        {
            let mut r = self.receipts.setter(receipt_id);
            match by_payee {
                true => r.by_payee.revoked.set(true),
                false => r.by_payer.revoked.set(true),
            }
        }
        let data = calldata::encode(
            IReputationRegistry::revokeFeedbackCall::SELECTOR,
            &[word(agent_id), word(index)],
        );
        call::call(self.vm(), reputation, &data).map_err(refused)?;
        self.vm().log(ReceiptFeedbackRevoked {
            receiptId: receipt_id,
            agentId: agent_id,
            byPayee: by_payee,
            feedbackIndex: index,
        });
        Ok(())
    }

    /// `(agentId, feedbackIndex, giver, revoked)` of one side's feedback on a receipt.
    pub(crate) fn feedback_of(
        &self,
        receipt_id: U256,
        by_payee: bool,
    ) -> (U256, u64, Address, bool) {
        let r = self.receipts.getter(receipt_id);
        let side = match by_payee {
            true => &r.by_payee,
            false => &r.by_payer,
        };
        (
            side.agent_id.get(),
            side.index.get().to(),
            side.giver.get(),
            side.revoked.get(),
        )
    }

    /// The Identity and Reputation registries, or [`FeedbackUnavailable`] where this chain has
    /// none.
    fn agent_registries(&self) -> Result<(Address, Address)> {
        let identity = self.identity_registry.get();
        let reputation = self.reputation_registry.get();
        if identity.is_zero() || reputation.is_zero() {
            return Err(FeedbackUnavailable {}.into());
        }
        Ok((identity, reputation))
    }

    /// Who signed `digest` for this side of the receipt: for the payee, the payee (an account's
    /// ECDSA or a contract's ERC-1271); for the payer, the session's key or the paying owner.
    fn giver(
        &self,
        receipt: &Quoted,
        by_payee: bool,
        digest: B256,
        signature: &[u8],
    ) -> Result<Address> {
        let recovered = signature::recover(self.vm(), digest, signature);
        if by_payee {
            if signature::is_valid(self.vm(), receipt.payee, digest, signature) {
                return Ok(receipt.payee);
            }
        } else {
            let (_, session_key, _) = self.session_authority(receipt.session_id);
            if recovered.is_some_and(|r| r == session_key) {
                return Ok(session_key);
            }
            if signature::is_valid(self.vm(), receipt.payer, digest, signature) {
                return Ok(receipt.payer);
            }
        }
        Err(FeedbackWrongSigner {
            signer: recovered.unwrap_or_default(),
        }
        .into())
    }

    /// An address-returning view `selector(arg)` of `target`; `None` if it reverts.
    fn address_view(&self, target: Address, selector: [u8; 4], arg: U256) -> Option<Address> {
        let out = call::view(self.vm(), target, &calldata::encode(selector, &[word(arg)]))?;
        (out.len() == 32).then(|| Address::from_slice(&out[12..]))
    }
}

/// A refusal of the Reputation Registry, passed on whole.
fn refused(reason: Vec<u8>) -> crate::RegistryError {
    FeedbackRefused {
        reason: reason.into(),
    }
    .into()
}
