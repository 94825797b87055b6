//! SessionWallet's errors: every failure is one of these Solidity custom errors.

use bursar_bindings::wallet::ISessionWallet::*;
pub use bursar_bindings::wallet::InvalidParameter;
use stylus_sdk::prelude::*;

/// Everything that makes a SessionWallet call revert (declared in `bursar_bindings::wallet`).
#[derive(SolidityError, Debug)]
pub enum WalletError {
    Unauthorized(WalletUnauthorized),
    UnknownSession(WalletUnknownSession),
    InvalidParameter(WalletInvalidParameter),
    InvalidSignature(WalletInvalidSignature),
    WrongSigner(WalletWrongSigner),
    NonceUsed(WalletNonceUsed),
    DeadlinePassed(WalletDeadlinePassed),
    SessionNotYetValid(WalletSessionNotYetValid),
    SessionExpired(WalletSessionExpired),
    LeaseLapsed(WalletLeaseLapsed),
    SessionRevoked(WalletSessionRevoked),
    SessionClosed(WalletSessionClosed),
    SessionStillActive(WalletSessionStillActive),
    CounterpartyNotAllowed(WalletCounterpartyNotAllowed),
    PaymentCapExceeded(WalletPaymentCapExceeded),
    PeriodBudgetExceeded(WalletPeriodBudgetExceeded),
    InsufficientDeposit(WalletInsufficientDeposit),
    ValueMismatch(WalletValueMismatch),
    TransferFailed(WalletTransferFailed),
    CallFailed(WalletCallFailed),
    UnknownPending(WalletUnknownPending),
    PendingExpired(WalletPendingExpired),
    PendingResolved(WalletPendingResolved),
    NoLease(WalletNoLease),
    TokenWithoutCode(WalletTokenWithoutCode),
    InvalidPayee(WalletInvalidPayee),
    TransferShortfall(WalletTransferShortfall),
}

impl WalletError {
    pub(crate) fn invalid(parameter: InvalidParameter) -> Self {
        WalletInvalidParameter {
            parameter: parameter as u8,
        }
        .into()
    }
}
