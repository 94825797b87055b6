//! ReceiptRegistry: payment receipts written by the wallet and provenance records signed by
//! session keys.

alloy_sol_types::sol! {
    #![sol(all_derives)]
    /// The external interface of ReceiptRegistry (see `contracts/receipt-registry`).
    interface IReceiptRegistry {
        function admin() external view returns (address);
        function wallet() external view returns (address);
        function setWallet(address wallet) external;
        function transferAdmin(address newAdmin) external;

        function recordReceipt(uint256 sessionId, address payer, address payee, address token, uint256 amount, bytes32 purpose) external returns (uint256);
        function acknowledge(uint256 receiptId, bytes32 responseHash) external;
        function getReceipt(uint256 receiptId) external view returns (uint256, address, address, address, uint256, bytes32, uint64, uint64, bytes32);
        function receiptCount() external view returns (uint256);

        function recordProvenance(uint256 sessionId, bytes32 subject, bytes32 inputs, bytes32 runtime, bytes32 policy, bytes32 uri, uint256[] parents, uint256 nonce, uint256 deadline, bytes signature) external returns (uint256);
        function revokeProvenance(uint256 recordId, bytes32 reason) external;
        function isValid(uint256 recordId) external view returns (bool);
        function getProvenance(uint256 recordId) external view returns (uint256, address, bytes32, bytes32, bytes32, bytes32, bytes32, uint64, bool);
        function provenanceParents(uint256 recordId) external view returns (uint256[]);
        function provenanceCount() external view returns (uint256);
        function isProvenanceNonceUsed(address attester, uint256 nonce) external view returns (bool);
        function domainSeparator() external view returns (bytes32);

        event WalletSet(address indexed wallet);
        event AdminTransferred(address indexed previousAdmin, address indexed newAdmin);
        event ReceiptRecorded(uint256 indexed receiptId, uint256 indexed sessionId, address indexed payee, address payer, address token, uint256 amount, bytes32 purpose, uint64 timestamp);
        event ReceiptAcknowledged(uint256 indexed receiptId, address indexed payee, bytes32 responseHash);
        event ProvenanceRecorded(uint256 indexed recordId, uint256 indexed sessionId, address indexed attester, bytes32 subject, bytes32 inputs, bytes32 runtime, bytes32 policy, bytes32 uri, uint256[] parents);
        event ProvenanceRevoked(uint256 indexed recordId, address indexed by, bytes32 reason);

        error RegistryUnauthorized(address caller);
        error RegistryInvalidAddress(address account);
        error ReceiptUnknown(uint256 receiptId);
        error ReceiptAlreadyAcknowledged(uint256 receiptId);
        error ProvenanceUnknown(uint256 recordId);
        error ProvenanceAlreadyRevoked(uint256 recordId);
        error ProvenanceInvalidSignature();
        error ProvenanceWrongSigner(address signer, address expected);
        error ProvenanceNonceUsed(address attester, uint256 nonce);
        error ProvenanceDeadlinePassed(uint256 deadline);
        error ProvenanceSessionInactive(uint256 sessionId);
        error ProvenanceUnknownParent(uint256 parentId);
        error ProvenanceTooManyParents(uint256 count, uint256 max);
    }
}

/// The most parents a provenance record may name (bounds gas and log size).
pub const MAX_PARENTS: usize = 16;
