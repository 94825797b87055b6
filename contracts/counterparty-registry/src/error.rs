//! CounterpartyRegistry's errors: every failure is one of these Solidity custom errors.

use bursar_bindings::counterparty::ICounterpartyRegistry::*;
use stylus_sdk::prelude::*;

/// Everything that makes a CounterpartyRegistry call revert (declared in
/// `bursar_bindings::counterparty`).
#[derive(SolidityError, Debug)]
pub enum RegistryError {
    /// No list has this id.
    UnknownList(CounterpartyUnknownList),
    /// The caller may not change this list (not its owner, or neither owner nor admin).
    Unauthorized(CounterpartyUnauthorized),
    /// An address that cannot be an owner, admin or counterparty: zero, or (as counterparty)
    /// the wallet, its gateway or a registry.
    InvalidAddress(CounterpartyInvalidAddress),
    /// `setEntries` arrays of different lengths.
    LengthMismatch(CounterpartyLengthMismatch),
    /// The list has no entry for this counterparty.
    UnknownEntry(CounterpartyUnknownEntry),
    /// `bind` by someone other than the binder, or a zero binder.
    NotBinder(CounterpartyNotBinder),
    /// `bind` after the registry was bound.
    AlreadyBound(CounterpartyAlreadyBound),
    /// `bind` to a wallet whose `counterpartyRegistry()` is another contract.
    WalletMismatch(CounterpartyWalletMismatch),
}
