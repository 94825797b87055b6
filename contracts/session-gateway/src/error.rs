//! SessionGateway's errors: every failure is one of these Solidity custom errors.

use bursar_bindings::gateway::ISessionGateway::*;
use stylus_sdk::prelude::*;

/// Everything that makes a SessionGateway call revert (declared in `bursar_bindings::gateway`).
#[derive(SolidityError, Debug)]
pub enum GatewayError {
    AlreadyBound(GatewayAlreadyBound),
    NotBound(GatewayNotBound),
    InvalidParameter(GatewayInvalidParameter),
    DeadlinePassed(GatewayDeadlinePassed),
    NonceUsed(GatewayNonceUsed),
    InvalidSignature(GatewayInvalidSignature),
    UnknownPending(GatewayUnknownPending),
    WalletCallFailed(GatewayWalletCallFailed),
}
