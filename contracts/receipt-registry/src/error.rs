//! ReceiptRegistry's errors: every failure is one of these Solidity custom errors.

use bursar_bindings::receipts::IReceiptRegistry::*;
use stylus_sdk::prelude::*;

/// Everything that makes a ReceiptRegistry call revert (declared in `bursar_bindings::receipts`).
#[derive(SolidityError, Debug)]
pub enum RegistryError {
    Unauthorized(RegistryUnauthorized),
    InvalidAddress(RegistryInvalidAddress),
    ReceiptUnknown(ReceiptUnknown),
    ReceiptAlreadyAcknowledged(ReceiptAlreadyAcknowledged),
    ProvenanceUnknown(ProvenanceUnknown),
    ProvenanceAlreadyRevoked(ProvenanceAlreadyRevoked),
    ProvenanceInvalidSignature(ProvenanceInvalidSignature),
    ProvenanceWrongSigner(ProvenanceWrongSigner),
    ProvenanceNonceUsed(ProvenanceNonceUsed),
    ProvenanceDeadlinePassed(ProvenanceDeadlinePassed),
    ProvenanceSessionInactive(ProvenanceSessionInactive),
    ProvenanceUnknownParent(ProvenanceUnknownParent),
    ProvenanceTooManyParents(ProvenanceTooManyParents),
}
