//! How a ReputationRegistry call fails, byte for byte as the deployed contract does: OpenZeppelin's
//! custom errors, `require` texts as `Error(string)` (`bursar_bindings::erc8004::reason`), and the
//! Identity Registry's revert (an unknown agent) passed on.

// Named only in the `export-abi` list.
#[cfg(feature = "export-abi")]
use bursar_bindings::erc8004::IReputationRegistry::*;

bursar_contract_common::failure!(
    ERC721NonexistentToken,
    OwnableUnauthorizedAccount,
    OwnableInvalidOwner,
    InvalidInitialization,
    UUPSUnauthorizedCallContext,
    UUPSUnsupportedProxiableUUID,
    ERC1967InvalidImplementation,
    ERC1967NonPayable,
);
