//! ReceiptRegistry's errors: every failure is one of these Solidity custom errors.

use bursar_bindings::receipts::IReceiptRegistry::*;
use stylus_sdk::prelude::*;

/// Everything that makes a ReceiptRegistry call revert (declared in `bursar_bindings::receipts`).
#[derive(SolidityError, Debug)]
pub enum RegistryError {
    /// The caller may not do this: not the wallet (`recordReceipt`, `releaseReceipt`), not the binder (`bind`),
    /// neither the owner nor an active attester (`revokeProvenance`); or a zero binder.
    Unauthorized(RegistryUnauthorized),
    /// `bind` after the registry was bound.
    AlreadyBound(RegistryAlreadyBound),
    /// `bind` to a wallet whose `receiptRegistry()` is another contract.
    WalletMismatch(RegistryWalletMismatch),
    /// No receipt has this id.
    ReceiptUnknown(ReceiptUnknown),
    /// The restated receipt (with the caller as payee) is not the one recorded.
    ReceiptMismatch(ReceiptMismatch),
    /// The payee has acknowledged this receipt already.
    ReceiptAlreadyAcknowledged(ReceiptAlreadyAcknowledged),
    /// The receipt was released: its reserved authorization was never used, nothing was paid.
    ReceiptWasReleased(ReceiptWasReleased),
    /// No provenance record has this id.
    ProvenanceUnknown(ProvenanceUnknown),
    /// The record was revoked already.
    ProvenanceAlreadyRevoked(ProvenanceAlreadyRevoked),
    /// The signature is malformed or does not recover (high `s`, bad `v`, wrong length).
    ProvenanceInvalidSignature(ProvenanceInvalidSignature),
    /// The signer is not the session's key.
    ProvenanceWrongSigner(ProvenanceWrongSigner),
    /// The attester has used this nonce.
    ProvenanceNonceUsed(ProvenanceNonceUsed),
    /// The signed record's deadline has passed.
    ProvenanceDeadlinePassed(ProvenanceDeadlinePassed),
    /// The session is unknown, revoked, closed, expired, lapsed or not yet started.
    ProvenanceSessionInactive(ProvenanceSessionInactive),
    /// A parent id that no record has.
    ProvenanceUnknownParent(ProvenanceUnknownParent),
    /// A parent that has been revoked.
    ProvenanceParentRevoked(ProvenanceParentRevoked),
    /// A parent named twice.
    ProvenanceDuplicateParent(ProvenanceDuplicateParent),
    /// More than `MAX_PARENTS` parents.
    ProvenanceTooManyParents(ProvenanceTooManyParents),
    /// The registry was constructed without ERC-8004's registries: this chain has none.
    FeedbackUnavailable(FeedbackUnavailable),
    /// This side of the receipt gave its feedback already (once per receipt and side, even
    /// after a revocation).
    FeedbackAlreadyGiven(FeedbackAlreadyGiven),
    /// This side of the receipt has no feedback to revoke (none given, or revoked already).
    FeedbackUnknown(FeedbackUnknown),
    /// The signed feedback's (or revocation's) deadline has passed.
    FeedbackDeadlinePassed(FeedbackDeadlinePassed),
    /// The signature is not the side's: neither the payer's session key nor the paying owner,
    /// not the payee, not the feedback's giver (`signer`: what it recovers to, or zero).
    FeedbackWrongSigner(FeedbackWrongSigner),
    /// The side rated (`account`) is neither the agent's owner nor its `agentWallet`, or the
    /// agent does not exist.
    FeedbackNotTheAgent(FeedbackNotTheAgent),
    /// The giver, or the side it speaks for, is the agent's owner or wallet: an agent cannot
    /// rate itself through a receipt of its own.
    FeedbackSelfDealing(FeedbackSelfDealing),
    /// The Reputation Registry refused the feedback or revocation (`reason`: its revert data).
    FeedbackRefused(FeedbackRefused),
}
