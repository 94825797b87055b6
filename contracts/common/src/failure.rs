//! Revert data built as Solidity contracts build theirs, for contracts that must fail byte for
//! byte as a deployed Solidity contract does (the ERC-8004 registries): custom errors with
//! static arguments, `require` texts as `Error(string)`, a callee's revert data passed on.

/// Defines `Failure`, a contract's error type: the revert data of a failed call, with the
/// custom errors its interface declares (`$error`, all `SolError`s) listed for `export-abi`.
#[macro_export]
macro_rules! failure {
    ($($error:ty),* $(,)?) => {
        /// The revert data of a failed call.
        #[derive(Debug, PartialEq, Eq)]
        pub struct Failure(pub alloc::vec::Vec<u8>);

        impl Failure {
            /// The custom error `E` with its static arguments.
            pub fn of<E: alloy_sol_types::SolError>(args: &[$crate::Word]) -> Self {
                Failure($crate::upgrade::error::<E>(args))
            }

            /// A failed `require(…, reason)`.
            pub fn require(reason: &str) -> Self {
                Failure($crate::abi::revert_reason(reason))
            }
        }

        impl From<Failure> for alloc::vec::Vec<u8> {
            fn from(failure: Failure) -> Self {
                failure.0
            }
        }

        /// The custom errors the interface declares (`Error(string)` is declared by none).
        #[cfg(feature = "export-abi")]
        impl stylus_sdk::abi::export::internal::InnerTypes for Failure {
            fn inner_types() -> alloc::vec::Vec<stylus_sdk::abi::export::internal::InnerType> {
                use alloy_sol_types::SolError;
                alloc::vec![$(stylus_sdk::abi::export::internal::InnerType {
                    name: alloc::format!("error {};", <$error as SolError>::SIGNATURE.replace(',', ", ")),
                    id: core::any::TypeId::of::<$error>(),
                }),*]
            }
        }
    };
}
