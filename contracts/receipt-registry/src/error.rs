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
}
