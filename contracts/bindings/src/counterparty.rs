//! CounterpartyRegistry: allowlists of payees shared by many sessions.

alloy_sol_types::sol! {
    #![sol(all_derives)]
    /// The external interface of CounterpartyRegistry (see `contracts/counterparty-registry`).
    ///
    /// `maxPerPayment == 0` means no per-counterparty cap. Lists start at id 1; unknown lists and
    /// unknown counterparties are denied. The binder named at construction (the deployer) binds
    /// the registry once to the SessionWallet that names it; from then on the wallet, its gateway,
    /// its receipt registry and this registry cannot be listed as counterparties.
    interface ICounterpartyRegistry {
        function bind(address wallet) external;
        function wallet() external view returns (address);

        function createList() external returns (uint256);
        function transferListOwnership(uint256 listId, address newOwner) external;
        function setAdmin(uint256 listId, address admin, bool enabled) external;
        function setEntry(uint256 listId, address counterparty, bool allowed, uint256 maxPerPayment, bytes32 label) external;
        function setEntries(uint256 listId, address[] counterparties, bool[] allowed, uint256[] maxPerPayment, bytes32[] labels) external;
        function removeEntry(uint256 listId, address counterparty) external;

        function isAllowed(uint256 listId, address counterparty, uint256 amount) external view returns (bool);
        function getEntry(uint256 listId, address counterparty) external view returns (bool, bool, uint256, bytes32);
        function listOwner(uint256 listId) external view returns (address);
        function isAdmin(uint256 listId, address account) external view returns (bool);
        function listCount() external view returns (uint256);

        event ListCreated(uint256 indexed listId, address indexed owner);
        event ListOwnershipTransferred(uint256 indexed listId, address indexed previousOwner, address indexed newOwner);
        event ListAdminSet(uint256 indexed listId, address indexed admin, bool enabled);
        event EntrySet(uint256 indexed listId, address indexed counterparty, address indexed by, bool allowed, uint256 maxPerPayment, bytes32 label);
        event EntryRemoved(uint256 indexed listId, address indexed counterparty, address indexed by);
        event WalletBound(address indexed wallet);

        error CounterpartyUnknownList(uint256 listId);
        error CounterpartyUnauthorized(uint256 listId, address caller);
        error CounterpartyInvalidAddress(address account);
        error CounterpartyLengthMismatch(uint256 counterparties, uint256 other);
        error CounterpartyUnknownEntry(uint256 listId, address counterparty);
        error CounterpartyNotBinder(address caller);
        error CounterpartyAlreadyBound(address wallet);
        error CounterpartyWalletMismatch(address wallet);
    }
}
