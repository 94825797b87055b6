//! ReceiptRegistry: payment receipts written by the wallet and provenance records signed by
//! session keys.

use alloy_primitives::{keccak256, B256};
use alloy_sol_types::SolValue;

alloy_sol_types::sol! {
    #![sol(all_derives)]
    /// The external interface of ReceiptRegistry (see `contracts/receipt-registry`).
    ///
    /// A receipt is stored as one word, its [`receipt_commitment`]; the full receipt is in the
    /// `ReceiptRecorded` event, and `verifyReceipt` checks a claimed receipt against the
    /// commitment. The receipt of an authorization reserved for a third party to settle (x402
    /// `exact`) that was never used is marked released (`releaseReceipt`, by the wallet); it
    /// cannot be acknowledged then. The binder named at construction (the deployer) binds the registry once to the
    /// SessionWallet that names it; after that nobody holds any power over the record.
    ///
    /// Feedback backed by payment (ERC-8004): `giveReceiptFeedback` gives the Reputation
    /// Registry named at construction a feedback on an agent for one receipt, with the receipt's
    /// commitment as `feedbackHash`; the registry is the feedback's client, so `getSummary(agent,
    /// [this registry], …)` counts only feedback a payment backs. The payer (its session's key or
    /// the paying owner) rates the payee's agent, or the payee rates the payer's agent
    /// (`byPayee`); once per receipt and side, never by the agent's own side, never on a released
    /// receipt. The giver's EIP-712 `ReceiptFeedback` signature authorizes it, so anyone (a
    /// relayer) may send it.
    interface IReceiptRegistry {
        function bind(address wallet) external;
        function wallet() external view returns (address);

        function recordReceipt(uint256 sessionId, address payer, address payee, address token, uint256 amount, bytes32 purpose) external returns (uint256);
        function acknowledge(uint256 receiptId, uint256 sessionId, address payer, address token, uint256 amount, bytes32 purpose, uint64 timestamp, bytes32 responseHash) external;
        function verifyReceipt(uint256 receiptId, uint256 sessionId, address payer, address payee, address token, uint256 amount, bytes32 purpose, uint64 timestamp) external view returns (bool);
        function getReceipt(uint256 receiptId) external view returns (bytes32, uint64, bytes32);
        function receiptCount() external view returns (uint256);
        function releaseReceipt(uint256 receiptId) external;
        function receiptReleasedAt(uint256 receiptId) external view returns (uint64);

        function recordProvenance(uint256 sessionId, bytes32 subject, bytes32 inputs, bytes32 runtime, bytes32 policy, bytes32 uri, uint256[] parents, uint256 nonce, uint256 deadline, bytes signature) external returns (uint256);
        function revokeProvenance(uint256 recordId, bytes32 reason) external;
        function isValid(uint256 recordId) external view returns (bool);
        function getProvenance(uint256 recordId) external view returns (uint256, address, bytes32, bytes32, bytes32, bytes32, bytes32, uint64, bool);
        function provenanceParents(uint256 recordId) external view returns (uint256[]);
        function provenanceCount() external view returns (uint256);
        function isProvenanceNonceUsed(address attester, uint256 nonce) external view returns (bool);
        function domainSeparator() external view returns (bytes32);

        function identityRegistry() external view returns (address);
        function reputationRegistry() external view returns (address);
        function giveReceiptFeedback(uint256 receiptId, uint256 sessionId, address payer, address payee, address token, uint256 amount, bytes32 purpose, uint64 timestamp, bool byPayee, uint256 agentId, int128 value, uint8 valueDecimals, string tag1, string tag2, string endpoint, string feedbackURI, uint256 deadline, bytes signature) external returns (uint64);
        function revokeReceiptFeedback(uint256 receiptId, bool byPayee, uint256 deadline, bytes signature) external;
        function receiptFeedback(uint256 receiptId, bool byPayee) external view returns (uint256 agentId, uint64 feedbackIndex, address giver, bool revoked);

        event WalletBound(address indexed wallet);
        event ReceiptRecorded(uint256 indexed receiptId, uint256 indexed sessionId, address indexed payee, address payer, address token, uint256 amount, bytes32 purpose, uint64 timestamp);
        event ReceiptAcknowledged(uint256 indexed receiptId, address indexed payee, bytes32 responseHash);
        event ReceiptReleased(uint256 indexed receiptId);
        event ProvenanceRecorded(uint256 indexed recordId, uint256 indexed sessionId, address indexed attester, bytes32 subject, bytes32 inputs, bytes32 runtime, bytes32 policy, bytes32 uri, uint256[] parents);
        event ProvenanceRevoked(uint256 indexed recordId, address indexed by, bytes32 reason);
        event ReceiptFeedbackGiven(uint256 indexed receiptId, uint256 indexed agentId, bool byPayee, address giver, uint64 feedbackIndex);
        event ReceiptFeedbackRevoked(uint256 indexed receiptId, uint256 indexed agentId, bool byPayee, uint64 feedbackIndex);

        error RegistryUnauthorized(address caller);
        error RegistryAlreadyBound(address wallet);
        error RegistryWalletMismatch(address wallet);
        error ReceiptUnknown(uint256 receiptId);
        error ReceiptMismatch(uint256 receiptId);
        error ReceiptAlreadyAcknowledged(uint256 receiptId);
        error ReceiptWasReleased(uint256 receiptId);
        error ProvenanceUnknown(uint256 recordId);
        error ProvenanceAlreadyRevoked(uint256 recordId);
        error ProvenanceInvalidSignature();
        error ProvenanceWrongSigner(address signer, address expected);
        error ProvenanceNonceUsed(address attester, uint256 nonce);
        error ProvenanceDeadlinePassed(uint256 deadline);
        error ProvenanceSessionInactive(uint256 sessionId);
        error ProvenanceUnknownParent(uint256 parentId);
        error ProvenanceParentRevoked(uint256 parentId);
        error ProvenanceDuplicateParent(uint256 parentId);
        error ProvenanceTooManyParents(uint256 count, uint256 max);
        error FeedbackUnavailable();
        error FeedbackAlreadyGiven(uint256 receiptId, bool byPayee);
        error FeedbackUnknown(uint256 receiptId, bool byPayee);
        error FeedbackDeadlinePassed(uint256 deadline);
        error FeedbackWrongSigner(address signer);
        error FeedbackNotTheAgent(uint256 agentId, address account);
        error FeedbackSelfDealing(uint256 agentId);
        error FeedbackRefused(bytes reason);
    }

    /// A payment receipt as `ReceiptRecorded` announces it; its ABI encoding is what the
    /// registry commits to.
    struct Receipt {
        uint256 sessionId;
        address payer;
        address payee;
        address token;
        uint256 amount;
        bytes32 purpose;
        uint64 timestamp;
    }
}

/// The most parents a provenance record may name (bounds gas and log size).
pub const MAX_PARENTS: usize = 16;

/// The word ReceiptRegistry stores for a receipt: `keccak256(abi.encode(receipt))`.
pub fn receipt_commitment(receipt: &Receipt) -> B256 {
    keccak256(receipt.abi_encode())
}

/// `giveReceiptFeedback` of `signed` (one side's EIP-712 `ReceiptFeedback`) for `receipt`,
/// restated as recorded, with that side's `signature`.
pub fn give_receipt_feedback(
    receipt: &Receipt,
    signed: crate::eip712::ReceiptFeedback,
    signature: alloy_primitives::Bytes,
) -> IReceiptRegistry::giveReceiptFeedbackCall {
    IReceiptRegistry::giveReceiptFeedbackCall {
        receiptId: signed.receiptId,
        sessionId: receipt.sessionId,
        payer: receipt.payer,
        payee: receipt.payee,
        token: receipt.token,
        amount: receipt.amount,
        purpose: receipt.purpose,
        timestamp: receipt.timestamp,
        byPayee: signed.byPayee,
        agentId: signed.agentId,
        value: signed.value,
        valueDecimals: signed.valueDecimals,
        tag1: signed.tag1,
        tag2: signed.tag2,
        endpoint: signed.endpoint,
        feedbackURI: signed.feedbackURI,
        deadline: signed.deadline,
        signature,
    }
}

impl From<&IReceiptRegistry::ReceiptRecorded> for Receipt {
    fn from(e: &IReceiptRegistry::ReceiptRecorded) -> Self {
        Self {
            sessionId: e.sessionId,
            payer: e.payer,
            payee: e.payee,
            token: e.token,
            amount: e.amount,
            purpose: e.purpose,
            timestamp: e.timestamp,
        }
    }
}
