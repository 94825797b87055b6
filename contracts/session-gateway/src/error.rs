//! SessionGateway's errors: every failure is one of these Solidity custom errors.

use bursar_bindings::gateway::ISessionGateway::*;
use stylus_sdk::prelude::*;

/// Everything that makes a SessionGateway call revert (declared in `bursar_bindings::gateway`).
#[derive(SolidityError, Debug)]
pub enum GatewayError {
    /// `bind` by someone other than the binder.
    Unauthorized(GatewayUnauthorized),
    /// `bind` after the gateway was bound.
    AlreadyBound(GatewayAlreadyBound),
    /// `bind` to a wallet whose `gateway()` is another contract.
    WalletMismatch(GatewayWalletMismatch),
    /// A signed call before the gateway was bound.
    NotBound(GatewayNotBound),
    /// An unusable argument (the code is a `bursar_bindings::wallet::InvalidParameter`).
    InvalidParameter(GatewayInvalidParameter),
    /// The signed message's deadline has passed.
    DeadlinePassed(GatewayDeadlinePassed),
    /// The owner has used this nonce.
    NonceUsed(GatewayNonceUsed),
    /// The signature is not the owner's (EOA or ERC-1271).
    InvalidSignature(GatewayInvalidSignature),
    /// The pending payment does not exist.
    UnknownPending(GatewayUnknownPending),
    /// The wallet reverted; `reason` is its custom error.
    WalletCallFailed(GatewayWalletCallFailed),
    /// A redeemed delegation's payment is above its session's co-sign threshold: it would
    /// wait for the owner, and a delegation pays now or not at all.
    DelegationNeedsApproval(GatewayDelegationNeedsApproval),
}
