//! ERC-8004 ("Trustless Agents"): the Identity and Reputation registries, as deployed on Arbitrum
//! One (version "2.0.0", OpenZeppelin 5.4 UUPS proxies) and as `agent0-sdk` speaks to them. The
//! devnet installs Bursar's Stylus implementations (`contracts/identity-registry`,
//! `contracts/reputation-registry`) behind ERC-1967 proxies at these same addresses.
//!
//! `require` failures of the deployed contracts revert with `Error(string)`
//! ([`alloy_sol_types::Revert`]); their texts are the `*_REASON` constants here, so the contracts
//! and their callers spell them once.

use alloy_primitives::{address, Address, B256, U256};

use crate::keccak;

mod summary;
pub use summary::Summary;

/// The Identity Registry's proxy on Arbitrum One (and on the devnet).
pub const IDENTITY_REGISTRY: Address = address!("8004A169FB4a3325136EB29fA0ceB6D2e539a432");
/// The Reputation Registry's proxy on Arbitrum One (and on the devnet).
pub const REPUTATION_REGISTRY: Address = address!("8004BAa17C55a88189AE136b182e5fdA19dE9b63");
/// The Stylus implementation behind [`IDENTITY_REGISTRY`] on the devnet: an address of its own.
pub const IDENTITY_IMPLEMENTATION: Address = address!("8004000000000000000000000000000000000001");
/// The Stylus implementation behind [`REPUTATION_REGISTRY`] on the devnet.
pub const REPUTATION_IMPLEMENTATION: Address = address!("8004000000000000000000000000000000000002");
/// Both registries' owner (who may upgrade them) on Arbitrum One; on the devnet too, where nobody
/// holds its key (impersonate it to upgrade).
pub const REGISTRY_OWNER: Address = address!("547289319C3e6aedB179C0b8e8aF0B5ACd062603");

/// What both registries' `getVersion()` answer.
pub const VERSION: &str = "2.0.0";
/// The metadata key the Identity Registry reserves for the agent's wallet.
pub const AGENT_WALLET_KEY: &str = "agentWallet";
/// The furthest ahead an `AgentWalletSet` deadline may be, in seconds.
pub const MAX_DEADLINE_DELAY: u64 = 300;
/// The Identity Registry's EIP-712 domain name (version "1").
pub const DOMAIN_NAME: &str = "ERC8004IdentityRegistry";
/// `keccak256` of [`DOMAIN_NAME`].
pub const DOMAIN_NAME_HASH: B256 = keccak(DOMAIN_NAME.as_bytes());
/// `keccak256("1")`: the domain's version.
pub const DOMAIN_VERSION_HASH: B256 = keccak(b"1");
/// The EIP-712 type the new wallet signs to consent to being the agent's wallet.
pub const AGENT_WALLET_SET_TYPE: &str =
    "AgentWalletSet(uint256 agentId,address newWallet,address owner,uint256 deadline)";
/// `keccak256` of [`AGENT_WALLET_SET_TYPE`].
pub const AGENT_WALLET_SET_TYPEHASH: B256 = keccak(AGENT_WALLET_SET_TYPE.as_bytes());
/// ERC-1967's implementation slot: `keccak256("eip1967.proxy.implementation") - 1`.
pub const IMPLEMENTATION_SLOT: B256 =
    alloy_primitives::b256!("360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc");
/// The largest |value| of a feedback (1e38, inclusive).
pub const MAX_ABS_VALUE: i128 = 100_000_000_000_000_000_000_000_000_000_000_000_000;
/// The most decimals a feedback's value may have.
pub const MAX_VALUE_DECIMALS: u8 = 18;

/// The EIP-712 digest `newWallet` signs (ECDSA, or vouches for through ERC-1271) to consent to
/// being agent `agent_id`'s wallet, set by its `owner` before `deadline`, on the Identity
/// Registry at `registry` of chain `chain_id`.
pub fn agent_wallet_set_digest(
    (chain_id, registry): (u64, Address),
    agent_id: U256,
    new_wallet: Address,
    owner: Address,
    deadline: U256,
) -> B256 {
    use alloy_sol_types::SolValue;
    let domain = alloy_primitives::keccak256(
        (
            crate::keccak(
                b"EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)",
            ),
            DOMAIN_NAME_HASH,
            DOMAIN_VERSION_HASH,
            U256::from(chain_id),
            registry,
        )
            .abi_encode(),
    );
    let message = alloy_primitives::keccak256(
        (
            AGENT_WALLET_SET_TYPEHASH,
            agent_id,
            new_wallet,
            owner,
            deadline,
        )
            .abi_encode(),
    );
    alloy_primitives::keccak256([&[0x19, 0x01], domain.as_slice(), message.as_slice()].concat())
}

/// What begins a session's `metadata` that names the agent it runs for (ERC-8004 has no session,
/// so Bursar's wallet keeps the link in the 32 bytes the owner signs): these 8 bytes, then the
/// agent's id in the next 24. A hash the host chose begins so by chance once in 2^64.
pub const SESSION_AGENT_PREFIX: [u8; 8] = *b"ERC-8004";

/// The session `metadata` naming agent `agent_id` (`None`: an id beyond 24 bytes, which no
/// registry reaches).
pub fn session_metadata(agent_id: U256) -> Option<B256> {
    if agent_id >> 192 != U256::ZERO {
        return None;
    }
    let mut word = agent_id.to_be_bytes::<32>();
    word[..8].copy_from_slice(&SESSION_AGENT_PREFIX);
    Some(B256::from(word))
}

/// The agent a session's `metadata` names, if it names one.
pub fn session_agent(metadata: B256) -> Option<U256> {
    let (prefix, id) = metadata.0.split_at(8);
    (prefix == SESSION_AGENT_PREFIX).then(|| U256::from_be_slice(id))
}

/// The deployed contracts' `require` texts.
pub mod reason {
    /// The caller is neither the agent's owner, an operator of the owner, nor approved for it.
    pub const NOT_AUTHORIZED: &str = "Not authorized";
    /// `agentWallet` can be set only through `setAgentWallet`.
    pub const RESERVED_KEY: &str = "reserved key";
    /// `setAgentWallet` to the zero address.
    pub const BAD_WALLET: &str = "bad wallet";
    /// The `AgentWalletSet` deadline has passed.
    pub const EXPIRED: &str = "expired";
    /// The deadline is more than [`super::MAX_DEADLINE_DELAY`] ahead.
    pub const DEADLINE_TOO_FAR: &str = "deadline too far";
    /// Neither an ECDSA signature of the new wallet nor its ERC-1271 consent.
    pub const INVALID_WALLET_SIG: &str = "invalid wallet sig";
    /// `valueDecimals` above 18.
    pub const TOO_MANY_DECIMALS: &str = "too many decimals";
    /// |value| above 1e38.
    pub const VALUE_TOO_LARGE: &str = "value too large";
    /// The agent's owner, an operator or its approved address rated it.
    pub const SELF_FEEDBACK: &str = "Self-feedback not allowed";
    /// Feedback indexes start at 1.
    pub const INDEX_ZERO: &str = "index must be > 0";
    /// No feedback of this client has this index.
    pub const INDEX_OUT_OF_BOUNDS: &str = "index out of bounds";
    /// The feedback was revoked before.
    pub const ALREADY_REVOKED: &str = "Already revoked";
    /// A response without a URI.
    pub const EMPTY_URI: &str = "Empty URI";
    /// `getSummary` names no client: the caller must say whose feedback it trusts.
    pub const CLIENTS_REQUIRED: &str = "clientAddresses required";
    /// `initialize` with a zero identity registry.
    pub const BAD_IDENTITY: &str = "bad identity";
}

alloy_sol_types::sol! {
    #![sol(all_derives)]

    /// The Identity Registry: an ERC-721 ("AgentIdentity", "AGENT") whose tokens are agents, each
    /// with a URI (its registration file), metadata and the reserved `agentWallet`, set by
    /// `register` to the registrant, by `setAgentWallet` with the new wallet's EIP-712 signature
    /// (or ERC-1271 consent), and cleared on every transfer. Agent ids start at 0.
    interface IIdentityRegistry {
        /// One metadata entry given to `register`.
        struct MetadataEntry {
            string metadataKey;
            bytes metadataValue;
        }

        function register() external returns (uint256 agentId);
        function register(string agentURI) external returns (uint256 agentId);
        function register(string agentURI, MetadataEntry[] metadata) external returns (uint256 agentId);
        function setAgentURI(uint256 agentId, string newURI) external;
        function getMetadata(uint256 agentId, string metadataKey) external view returns (bytes);
        function setMetadata(uint256 agentId, string metadataKey, bytes metadataValue) external;
        function getAgentWallet(uint256 agentId) external view returns (address);
        function setAgentWallet(uint256 agentId, address newWallet, uint256 deadline, bytes signature) external;
        function unsetAgentWallet(uint256 agentId) external;
        function isAuthorizedOrOwner(address spender, uint256 agentId) external view returns (bool);
        function getVersion() external pure returns (string);
        function eip712Domain() external view returns (bytes1 fields, string name, string version, uint256 chainId, address verifyingContract, bytes32 salt, uint256[] extensions);

        function name() external view returns (string);
        function symbol() external view returns (string);
        function tokenURI(uint256 tokenId) external view returns (string);
        function balanceOf(address owner) external view returns (uint256);
        function ownerOf(uint256 tokenId) external view returns (address);
        function getApproved(uint256 tokenId) external view returns (address);
        function isApprovedForAll(address owner, address operator) external view returns (bool);
        function approve(address to, uint256 tokenId) external;
        function setApprovalForAll(address operator, bool approved) external;
        function transferFrom(address from, address to, uint256 tokenId) external;
        function safeTransferFrom(address from, address to, uint256 tokenId) external;
        function safeTransferFrom(address from, address to, uint256 tokenId, bytes data) external;
        function supportsInterface(bytes4 interfaceId) external view returns (bool);

        function initialize() external;
        function owner() external view returns (address);
        function transferOwnership(address newOwner) external;
        function renounceOwnership() external;
        function proxiableUUID() external view returns (bytes32);
        function upgradeToAndCall(address newImplementation, bytes data) external payable;
        function UPGRADE_INTERFACE_VERSION() external view returns (string);

        event Registered(uint256 indexed agentId, string agentURI, address indexed owner);
        event URIUpdated(uint256 indexed agentId, string newURI, address indexed updatedBy);
        event MetadataSet(uint256 indexed agentId, string indexed indexedMetadataKey, string metadataKey, bytes metadataValue);
        event Transfer(address indexed from, address indexed to, uint256 indexed tokenId);
        event Approval(address indexed owner, address indexed approved, uint256 indexed tokenId);
        event ApprovalForAll(address indexed owner, address indexed operator, bool approved);
        event MetadataUpdate(uint256 _tokenId);
        event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);
        event Upgraded(address indexed implementation);
        event Initialized(uint64 version);

        error ERC721NonexistentToken(uint256 tokenId);
        error ERC721InvalidOwner(address owner);
        error ERC721InvalidReceiver(address receiver);
        error ERC721InvalidSender(address sender);
        error ERC721InsufficientApproval(address operator, uint256 tokenId);
        error ERC721IncorrectOwner(address sender, uint256 tokenId, address owner);
        error ERC721InvalidApprover(address approver);
        error ERC721InvalidOperator(address operator);
        error OwnableUnauthorizedAccount(address account);
        error OwnableInvalidOwner(address owner);
        error InvalidInitialization();
        error UUPSUnauthorizedCallContext();
        error UUPSUnsupportedProxiableUUID(bytes32 slot);
        error ERC1967InvalidImplementation(address implementation);
        error ERC1967NonPayable();
    }

    /// The Reputation Registry: feedback (a signed fixed-point value with tags) that anyone but
    /// the agent's owner and operators gives an agent, revocable by its author, answerable by
    /// anyone; summaries over the clients the caller names. Feedback indexes start at 1 per
    /// (agent, client).
    interface IReputationRegistry {
        function initialize(address identityRegistry) external;
        function getIdentityRegistry() external view returns (address);
        function giveFeedback(uint256 agentId, int128 value, uint8 valueDecimals, string tag1, string tag2, string endpoint, string feedbackURI, bytes32 feedbackHash) external;
        function revokeFeedback(uint256 agentId, uint64 feedbackIndex) external;
        function appendResponse(uint256 agentId, address clientAddress, uint64 feedbackIndex, string responseURI, bytes32 responseHash) external;
        function getLastIndex(uint256 agentId, address clientAddress) external view returns (uint64);
        function readFeedback(uint256 agentId, address clientAddress, uint64 feedbackIndex) external view returns (int128 value, uint8 valueDecimals, string tag1, string tag2, bool isRevoked);
        function getSummary(uint256 agentId, address[] clientAddresses, string tag1, string tag2) external view returns (uint64 count, int128 summaryValue, uint8 summaryValueDecimals);
        function readAllFeedback(uint256 agentId, address[] clientAddresses, string tag1, string tag2, bool includeRevoked) external view returns (address[] clients, uint64[] feedbackIndexes, int128[] values, uint8[] valueDecimals, string[] tag1s, string[] tag2s, bool[] revokedStatuses);
        function getResponseCount(uint256 agentId, address clientAddress, uint64 feedbackIndex, address[] responders) external view returns (uint64 count);
        function getClients(uint256 agentId) external view returns (address[]);
        function getVersion() external pure returns (string);
        function owner() external view returns (address);
        function transferOwnership(address newOwner) external;
        function renounceOwnership() external;
        function proxiableUUID() external view returns (bytes32);
        function upgradeToAndCall(address newImplementation, bytes data) external payable;
        function UPGRADE_INTERFACE_VERSION() external view returns (string);

        event NewFeedback(uint256 indexed agentId, address indexed clientAddress, uint64 feedbackIndex, int128 value, uint8 valueDecimals, string indexed indexedTag1, string tag1, string tag2, string endpoint, string feedbackURI, bytes32 feedbackHash);
        event FeedbackRevoked(uint256 indexed agentId, address indexed clientAddress, uint64 indexed feedbackIndex);
        event ResponseAppended(uint256 indexed agentId, address indexed clientAddress, uint64 feedbackIndex, address indexed responder, string responseURI, bytes32 responseHash);
        event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);
        event Upgraded(address indexed implementation);
        event Initialized(uint64 version);

        /// Bubbled from the Identity Registry for an unknown agent.
        error ERC721NonexistentToken(uint256 tokenId);
        error OwnableUnauthorizedAccount(address account);
        error OwnableInvalidOwner(address owner);
        error InvalidInitialization();
        error UUPSUnauthorizedCallContext();
        error UUPSUnsupportedProxiableUUID(bytes32 slot);
        error ERC1967InvalidImplementation(address implementation);
        error ERC1967NonPayable();
    }

    /// ERC-721's receiver hook, called by `safeTransferFrom` and `register` on contracts.
    interface IERC721Receiver {
        function onERC721Received(address operator, address from, uint256 tokenId, bytes data) external returns (bytes4);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::{b256, hex};
    use alloy_sol_types::{SolCall, SolEvent};

    #[test]
    fn a_sessions_metadata_names_its_agent_and_nothing_else_does() {
        for id in [
            U256::ZERO,
            U256::from(7),
            (U256::from(1) << 192) - U256::from(1),
        ] {
            let m = session_metadata(id).unwrap();
            assert_eq!(&m[..8], b"ERC-8004");
            assert_eq!(session_agent(m), Some(id));
        }
        assert_eq!(session_metadata(U256::from(1) << 192), None);
        assert_eq!(session_agent(B256::ZERO), None);
        assert_eq!(session_agent(crate::keccak(b"sandbox e2b:sbx_7f3a")), None);
    }

    /// Selectors and topics the deployed version has (read from its source and agent0-sdk 1.7.1's
    /// ABIs): a typo in a declaration above would change one of them.
    #[test]
    fn selectors_and_topics_are_those_of_the_deployed_version() {
        use IIdentityRegistry as I;
        use IReputationRegistry as R;
        assert_eq!(I::register_0Call::SELECTOR, hex!("1aa3a008"));
        assert_eq!(I::register_1Call::SELECTOR, hex!("f2c298be"));
        assert_eq!(I::register_2Call::SELECTOR, hex!("8ea42286"));
        assert_eq!(I::setAgentWalletCall::SELECTOR, hex!("2d1ef5ae"));
        assert_eq!(I::isAuthorizedOrOwnerCall::SELECTOR, hex!("d95e72be"));
        assert_eq!(I::getAgentWalletCall::SELECTOR, hex!("00339509"));
        assert_eq!(R::giveFeedbackCall::SELECTOR, hex!("3c036a7e"));
        assert_eq!(R::getSummaryCall::SELECTOR, hex!("81bbba58"));
        assert_eq!(R::readAllFeedbackCall::SELECTOR, hex!("d9d84224"));
        assert_eq!(R::getResponseCountCall::SELECTOR, hex!("6e04cacd"));
        assert_eq!(
            I::Registered::SIGNATURE_HASH,
            b256!("ca52e62c367d81bb2e328eb795f7c7ba24afb478408a26c0e201d155c449bc4a")
        );
        assert_eq!(
            I::MetadataSet::SIGNATURE_HASH,
            b256!("2c149ed548c6d2993cd73efe187df6eccabe4538091b33adbd25fafdb8a1468b")
        );
        assert_eq!(
            R::NewFeedback::SIGNATURE_HASH,
            b256!("6a4a61743519c9d648a14e6493f47dbe3ff1aa29e7785c96c8326a205e58febc")
        );
        assert_eq!(
            R::ResponseAppended::SIGNATURE_HASH,
            b256!("b1c6be0b5b8aef6539e2fac0fd131a2faa7b49edf8e505b5eb0ad487d56051d4")
        );
        assert_eq!(
            AGENT_WALLET_SET_TYPEHASH,
            b256!("678b53cd718d595370ab070ebf48edfdcd834beac116bf23e625fc7f4d5b7d32")
        );
    }
}
