//! How an IdentityRegistry call fails, byte for byte as the deployed contract does: OpenZeppelin's
//! custom errors, `require` texts as `Error(string)` (`bursar_bindings::erc8004::reason`), and a
//! receiver's own revert data bubbled up.

use alloc::vec::Vec;
use alloy_sol_types::SolError;
use bursar_contract_common::{abi, upgrade, Word};

/// The revert data of a failed call.
#[derive(Debug, PartialEq, Eq)]
pub struct Failure(pub Vec<u8>);

impl Failure {
    /// The custom error `E` with its static arguments.
    pub fn of<E: SolError>(args: &[Word]) -> Self {
        Failure(upgrade::error::<E>(args))
    }

    /// A failed `require(…, reason)`.
    pub fn require(reason: &str) -> Self {
        Failure(abi::revert_reason(reason))
    }
}

impl From<Failure> for Vec<u8> {
    fn from(failure: Failure) -> Self {
        failure.0
    }
}

/// The custom errors the interface declares (the `require` texts are `Error(string)`, which no
/// interface declares).
#[cfg(feature = "export-abi")]
impl stylus_sdk::abi::export::internal::InnerTypes for Failure {
    fn inner_types() -> Vec<stylus_sdk::abi::export::internal::InnerType> {
        use alloc::format;
        use bursar_bindings::erc8004::IIdentityRegistry::*;
        use core::any::TypeId;
        use stylus_sdk::abi::export::internal::InnerType;
        macro_rules! errors {
            ($($error:ty),*) => {
                alloc::vec![$(InnerType {
                    name: format!("error {};", <$error as SolError>::SIGNATURE.replace(',', ", ")),
                    id: TypeId::of::<$error>(),
                }),*]
            };
        }
        errors!(
            ERC721NonexistentToken,
            ERC721InvalidOwner,
            ERC721InvalidReceiver,
            ERC721InvalidSender,
            ERC721InsufficientApproval,
            ERC721IncorrectOwner,
            ERC721InvalidApprover,
            ERC721InvalidOperator,
            OwnableUnauthorizedAccount,
            OwnableInvalidOwner,
            InvalidInitialization,
            UUPSUnauthorizedCallContext,
            UUPSUnsupportedProxiableUUID,
            ERC1967InvalidImplementation,
            ERC1967NonPayable
        )
    }
}
