//! CounterpartyRegistry's errors: every failure is one of these Solidity custom errors.

use bursar_bindings::counterparty::ICounterpartyRegistry::*;
use stylus_sdk::prelude::*;

/// Everything that makes a CounterpartyRegistry call revert (declared in
/// `bursar_bindings::counterparty`).
#[derive(SolidityError, Debug)]
pub enum RegistryError {
    UnknownList(CounterpartyUnknownList),
    Unauthorized(CounterpartyUnauthorized),
    InvalidAddress(CounterpartyInvalidAddress),
    LengthMismatch(CounterpartyLengthMismatch),
    UnknownEntry(CounterpartyUnknownEntry),
}
