//! SessionWallet's errors: every failure is one of these Solidity custom errors, declared once
//! in `bursar_bindings::wallet` (where each is documented).
//!
//! The enum is written out rather than derived with `#[derive(SolidityError)]` for one variant:
//! [`WalletError::CallFailed`] keeps the failed call's revert data as plain bytes, because
//! alloy's `Bytes` would bring the `bytes` crate's vtables into the WASM (750 bytes compressed).

use alloc::vec::Vec;
use alloy_primitives::Address;
use alloy_sol_types::SolError;
use bursar_bindings::wallet::ISessionWallet::*;
pub use bursar_bindings::wallet::InvalidParameter;
use bursar_contract_common::{calldata, word};

macro_rules! wallet_errors {
    ($($(#[$doc:meta])* $variant:ident($error:ident),)*) => {
        /// Everything that makes a SessionWallet call revert.
        #[derive(Debug)]
        pub enum WalletError {
            $($(#[$doc])* $variant($error),)*
            /// [`WalletCallFailed`]: a call to a registry failed; `reason` is its revert data.
            CallFailed {
                /// The contract called.
                target: Address,
                /// What it reverted with.
                reason: Vec<u8>,
            },
        }

        $(impl From<$error> for WalletError {
            fn from(error: $error) -> Self {
                WalletError::$variant(error)
            }
        })*

        /// The revert data: the custom error's ABI encoding.
        impl From<WalletError> for Vec<u8> {
            fn from(error: WalletError) -> Vec<u8> {
                match error {
                    $(WalletError::$variant(e) => e.abi_encode(),)*
                    WalletError::CallFailed { target, reason } => calldata::encode_with_bytes(
                        WalletCallFailed::SELECTOR,
                        &[word(target)],
                        &reason,
                    ),
                }
            }
        }

        /// The errors `export-abi` lists.
        #[cfg(feature = "export-abi")]
        impl stylus_sdk::abi::export::internal::InnerTypes for WalletError {
            fn inner_types() -> Vec<stylus_sdk::abi::export::internal::InnerType> {
                use alloc::format;
                use core::any::TypeId;
                use stylus_sdk::abi::export::internal::InnerType;
                fn inner<E: SolError + 'static>() -> InnerType {
                    InnerType {
                        name: format!("error {};", E::SIGNATURE.replace(',', ", ")),
                        id: TypeId::of::<E>(),
                    }
                }
                vec![$(inner::<$error>(),)* inner::<WalletCallFailed>()]
            }
        }
    };
}

wallet_errors! {
    /// [`WalletUnauthorized`]: the caller may not do this.
    Unauthorized(WalletUnauthorized),
    /// [`WalletUnknownSession`]: no session has this id.
    UnknownSession(WalletUnknownSession),
    /// [`WalletInvalidParameter`]: an argument is out of its domain ([`InvalidParameter`]).
    InvalidParameter(WalletInvalidParameter),
    /// [`WalletInvalidSignature`]: the signature is malformed or does not recover.
    InvalidSignature(WalletInvalidSignature),
    /// [`WalletWrongSigner`]: the signature is someone else's.
    WrongSigner(WalletWrongSigner),
    /// [`WalletNonceUsed`]: the signed nonce was used before (a payment intent's or renewal's),
    /// or the owner opened a session with this nonce before.
    NonceUsed(WalletNonceUsed),
    /// [`WalletDeadlinePassed`]: the signed deadline is in the past.
    DeadlinePassed(WalletDeadlinePassed),
    /// [`WalletSessionNotYetValid`]: the session's `validAfter` is still ahead.
    SessionNotYetValid(WalletSessionNotYetValid),
    /// [`WalletSessionExpired`]: the session's `expiresAt` has passed.
    SessionExpired(WalletSessionExpired),
    /// [`WalletLeaseLapsed`]: the session's lease was not renewed in time.
    LeaseLapsed(WalletLeaseLapsed),
    /// [`WalletSessionRevoked`]: the session was revoked.
    SessionRevoked(WalletSessionRevoked),
    /// [`WalletSessionClosed`]: the session was closed and refunded.
    SessionClosed(WalletSessionClosed),
    /// [`WalletSessionStillActive`]: only the owner may close a live session.
    SessionStillActive(WalletSessionStillActive),
    /// [`WalletCounterpartyNotAllowed`]: the session's list does not allow this payee/amount.
    CounterpartyNotAllowed(WalletCounterpartyNotAllowed),
    /// [`WalletPaymentCapExceeded`]: above the per-payment cap.
    PaymentCapExceeded(WalletPaymentCapExceeded),
    /// [`WalletPeriodBudgetExceeded`]: above what is left of the period budget.
    PeriodBudgetExceeded(WalletPeriodBudgetExceeded),
    /// [`WalletInsufficientDeposit`]: above the deposit not yet spent or held.
    InsufficientDeposit(WalletInsufficientDeposit),
    /// [`WalletValueMismatch`]: `msg.value` is not what the token and amount require.
    ValueMismatch(WalletValueMismatch),
    /// [`WalletTransferFailed`]: the token (or native transfer) refused to move funds.
    TransferFailed(WalletTransferFailed),
    /// [`WalletUnknownPending`]: no pending payment has this id.
    UnknownPending(WalletUnknownPending),
    /// [`WalletPendingExpired`]: the pending payment waited too long to be approved.
    PendingExpired(WalletPendingExpired),
    /// [`WalletPendingResolved`]: the pending payment was approved or rejected already.
    PendingResolved(WalletPendingResolved),
    /// [`WalletNoLease`]: the session has no lease to renew.
    NoLease(WalletNoLease),
    /// [`WalletTokenWithoutCode`]: the token address holds no contract (yet).
    TokenWithoutCode(WalletTokenWithoutCode),
    /// [`WalletInvalidPayee`]: zero, this wallet, its gateway or a registry.
    InvalidPayee(WalletInvalidPayee),
    /// [`WalletTransferShortfall`]: the token delivered another amount than was pulled.
    TransferShortfall(WalletTransferShortfall),
    /// [`WalletUnknownReservation`]: no reserved (and approved) authorization has this digest,
    /// or it was released already.
    UnknownReservation(WalletUnknownReservation),
    /// [`WalletReservationLive`]: the authorization can still be used until `validBefore`.
    ReservationLive(WalletReservationLive),
    /// [`WalletReservationUsed`]: the token says the authorization was used: it was paid.
    ReservationUsed(WalletReservationUsed),
}

impl WalletError {
    pub(crate) fn invalid(parameter: InvalidParameter) -> Self {
        WalletInvalidParameter {
            parameter: parameter as u8,
        }
        .into()
    }
}
