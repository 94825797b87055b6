//! How an IdentityRegistry call fails, byte for byte as the deployed contract does: OpenZeppelin's
//! custom errors, `require` texts as `Error(string)` (`bursar_bindings::erc8004::reason`), and a
//! receiver's own revert data passed on.

// Named only in the `export-abi` list.
#[cfg(feature = "export-abi")]
use bursar_bindings::erc8004::IIdentityRegistry::*;

bursar_contract_common::failure!(
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
    ERC1967NonPayable,
);
