//! TestToken's errors: the EIP-6093 / EIP-2612 / Ownable custom errors of OpenZeppelin 5.

use bursar_bindings::token::ITestToken::*;
use stylus_sdk::prelude::*;

/// Everything that makes a TestToken call revert (declared in `bursar_bindings::token`).
#[derive(SolidityError, Debug)]
pub enum TokenError {
    InsufficientBalance(ERC20InsufficientBalance),
    InvalidSender(ERC20InvalidSender),
    InvalidReceiver(ERC20InvalidReceiver),
    InsufficientAllowance(ERC20InsufficientAllowance),
    InvalidApprover(ERC20InvalidApprover),
    InvalidSpender(ERC20InvalidSpender),
    ExpiredSignature(ERC2612ExpiredSignature),
    InvalidSigner(ERC2612InvalidSigner),
    UnauthorizedAccount(OwnableUnauthorizedAccount),
    InvalidOwner(OwnableInvalidOwner),
    Overflow(TokenOverflow),
}
