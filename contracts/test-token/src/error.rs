//! TestToken's errors: the EIP-6093 / EIP-2612 / Ownable custom errors of OpenZeppelin 5.

use bursar_bindings::token::ITestToken::*;
use stylus_sdk::prelude::*;

/// Everything that makes a TestToken call revert (declared in `bursar_bindings::token`).
#[derive(SolidityError, Debug)]
pub enum TokenError {
    /// [`ERC20InsufficientBalance`]: the sender holds less than the amount.
    InsufficientBalance(ERC20InsufficientBalance),
    /// [`ERC20InvalidSender`]: transfer from the zero address.
    InvalidSender(ERC20InvalidSender),
    /// [`ERC20InvalidReceiver`]: transfer or mint to the zero address.
    InvalidReceiver(ERC20InvalidReceiver),
    /// [`ERC20InsufficientAllowance`]: the spender's allowance is less than the amount.
    InsufficientAllowance(ERC20InsufficientAllowance),
    /// [`ERC20InvalidApprover`]: approval from the zero address.
    InvalidApprover(ERC20InvalidApprover),
    /// [`ERC20InvalidSpender`]: approval for the zero address.
    InvalidSpender(ERC20InvalidSpender),
    /// [`ERC2612ExpiredSignature`]: the permit's deadline has passed.
    ExpiredSignature(ERC2612ExpiredSignature),
    /// [`ERC2612InvalidSigner`]: the permit was not signed by its owner.
    InvalidSigner(ERC2612InvalidSigner),
    /// [`OwnableUnauthorizedAccount`]: only the owner may mint or hand over ownership.
    UnauthorizedAccount(OwnableUnauthorizedAccount),
    /// [`OwnableInvalidOwner`]: the zero address cannot own the token.
    InvalidOwner(OwnableInvalidOwner),
    /// [`TokenOverflow`]: the total supply would pass `uint256`.
    Overflow(TokenOverflow),
}
