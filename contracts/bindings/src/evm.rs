//! The EVM contracts a Bursar session meets on Arbitrum, and that the devnet installs with
//! `--with-evm-fixtures` (built from their registry packages by `tools/evm-fixtures`): USDC
//! (Circle's FiatToken v2.2 behind its proxy), Safe 1.4.1 (owners of sessions, ERC-1271 through
//! its fallback handler), Multicall3 and Permit2, at the addresses they have on Arbitrum One.
//! Only the functions Bursar and its tests call are declared.

use alloy_primitives::{address, Address};

/// USDC's proxy (native USDC on Arbitrum One).
pub const USDC: Address = address!("af88d065e77c8cC2239327C5EDb3A432268e5831");
/// The FiatToken v2.2 implementation behind [`USDC`]: a devnet address of its own.
pub const USDC_IMPLEMENTATION: Address = address!("5dc0000000000000000000000000000000000002");
/// USDC's proxy admin on the devnet: an address without a key (a transparent proxy's admin
/// cannot use the token, so it is nobody's account); impersonate it to upgrade.
pub const USDC_PROXY_ADMIN: Address = address!("5dc0000000000000000000000000000000000001");
/// The SignatureChecker library USDC calls for ERC-1271 signers: a devnet address of its own.
pub const USDC_SIGNATURE_CHECKER: Address = address!("5dc0000000000000000000000000000000000003");
/// USDC's decimals.
pub const USDC_DECIMALS: u8 = 6;

/// Safe 1.4.1's singleton.
pub const SAFE: Address = address!("41675C099F32341bf84BFc5382aF534df5C7461a");
/// Safe 1.4.1's singleton with events for every transaction (what L2s use).
pub const SAFE_L2: Address = address!("29fcB43b46531BcA003ddC8FCB67FFE91900C762");
/// Safe 1.4.1's proxy factory.
pub const SAFE_PROXY_FACTORY: Address = address!("4e1DCf7AD4e460CfD30791CCC4F9c8a4f820ec67");
/// Safe 1.4.1's fallback handler: ERC-1271 `isValidSignature` for the Safe.
pub const SAFE_FALLBACK_HANDLER: Address = address!("fd0732Dc9E303f09fCEf3a7388Ad10A83459Ec99");
/// Safe 1.4.1's MultiSend.
pub const SAFE_MULTI_SEND: Address = address!("38869bf66a61cF6bDB996A6aE40D5853Fd43B526");
/// Safe 1.4.1's MultiSendCallOnly.
pub const SAFE_MULTI_SEND_CALL_ONLY: Address = address!("9641d764fc13c8B624c04430C7356C1C7C8102e2");
/// Safe 1.4.1's CreateCall.
pub const SAFE_CREATE_CALL: Address = address!("9b35Af71d77eaf8d7e40252370304687390A1A52");
/// Safe 1.4.1's SignMessageLib.
pub const SAFE_SIGN_MESSAGE_LIB: Address = address!("d53cd0aB83D845Ac265BE939c57F53AD838012c9");
/// Safe 1.4.1's SimulateTxAccessor.
pub const SAFE_SIMULATE_TX_ACCESSOR: Address = address!("3d4BA2E0884aa488718476ca2FB8Efc291A46199");
/// Multicall3.
pub const MULTICALL3: Address = address!("cA11bde05977b3631167028862bE2a173976CA11");
/// Uniswap's Permit2.
pub const PERMIT2: Address = address!("000000000022D473030F116dDEE9F6B43aC78BA3");

alloy_sol_types::sol! {
    #![sol(all_derives)]

    /// USDC: FiatToken v2.2 (ERC-20, EIP-2612 `permit`, EIP-3009 authorizations; contract
    /// signers through ERC-1271 in the `bytes signature` overloads).
    interface IFiatToken {
        function name() external view returns (string);
        function symbol() external view returns (string);
        function decimals() external view returns (uint8);
        function version() external view returns (string);
        function totalSupply() external view returns (uint256);
        function balanceOf(address account) external view returns (uint256);
        function allowance(address owner, address spender) external view returns (uint256);
        function transfer(address to, uint256 value) external returns (bool);
        function transferFrom(address from, address to, uint256 value) external returns (bool);
        function approve(address spender, uint256 value) external returns (bool);
        function DOMAIN_SEPARATOR() external view returns (bytes32);
        function nonces(address owner) external view returns (uint256);
        function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s) external;
        function authorizationState(address authorizer, bytes32 nonce) external view returns (bool);
        function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature) external;
        function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s) external;
        function initialize(string tokenName, string tokenSymbol, string tokenCurrency, uint8 tokenDecimals, address newMasterMinter, address newPauser, address newBlacklister, address newOwner) external;
        function initializeV2(string newName) external;
        function initializeV2_1(address lostAndFound) external;
        function initializeV2_2(address[] accountsToBlacklist, string newSymbol) external;
        function configureMinter(address minter, uint256 minterAllowedAmount) external returns (bool);
        function mint(address to, uint256 amount) external returns (bool);
        function masterMinter() external view returns (address);
        function owner() external view returns (address);
        event Transfer(address indexed from, address indexed to, uint256 value);
        event Approval(address indexed owner, address indexed spender, uint256 value);
        event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce);
        event Mint(address indexed minter, address indexed to, uint256 amount);
    }

    /// USDC's proxy (`AdminUpgradeabilityProxy`): its own functions answer only its admin.
    interface IFiatTokenProxy {
        function admin() external view returns (address);
        function implementation() external view returns (address);
    }

    /// A Safe (1.4.1) as its owners and relayers use it.
    interface ISafe {
        function setup(address[] owners, uint256 threshold, address to, bytes data, address fallbackHandler, address paymentToken, uint256 payment, address paymentReceiver) external;
        function execTransaction(address to, uint256 value, bytes data, uint8 operation, uint256 safeTxGas, uint256 baseGas, uint256 gasPrice, address gasToken, address refundReceiver, bytes signatures) external payable returns (bool success);
        function getTransactionHash(address to, uint256 value, bytes data, uint8 operation, uint256 safeTxGas, uint256 baseGas, uint256 gasPrice, address gasToken, address refundReceiver, uint256 nonce) external view returns (bytes32);
        function checkSignatures(bytes32 dataHash, bytes data, bytes signatures) external view;
        function getOwners() external view returns (address[]);
        function getThreshold() external view returns (uint256);
        function nonce() external view returns (uint256);
        function domainSeparator() external view returns (bytes32);
        function VERSION() external view returns (string);
        event ExecutionSuccess(bytes32 indexed txHash, uint256 payment);
        event ExecutionFailure(bytes32 indexed txHash, uint256 payment);
    }

    /// Safe 1.4.1's proxy factory.
    interface ISafeProxyFactory {
        function createProxyWithNonce(address singleton, bytes initializer, uint256 saltNonce) external returns (address proxy);
        function proxyCreationCode() external pure returns (bytes);
        event ProxyCreation(address indexed proxy, address singleton);
    }

    /// Safe 1.4.1's CompatibilityFallbackHandler, reached through the Safe's fallback.
    interface ISafeFallbackHandler {
        function getMessageHashForSafe(address safe, bytes message) external view returns (bytes32);
        function isValidSignature(bytes32 dataHash, bytes signature) external view returns (bytes4);
    }

    /// Multicall3.
    interface IMulticall3 {
        struct Call3 {
            address target;
            bool allowFailure;
            bytes callData;
        }
        struct Result {
            bool success;
            bytes returnData;
        }
        function aggregate3(Call3[] calls) external payable returns (Result[] returnData);
        function getChainId() external view returns (uint256 chainid);
    }

    /// Uniswap's Permit2 (the parts a test reads).
    interface IPermit2 {
        function DOMAIN_SEPARATOR() external view returns (bytes32);
    }
}

impl crate::eip712::TransferWithAuthorization {
    /// USDC's `transferWithAuthorization` settling this authorization with `signature`
    /// (`r ‖ s ‖ v`): through the `(…, v, r, s)` overload when `split` — how x402's facilitator
    /// sends a 65-byte signature — else through the `(…, bytes signature)` one.
    pub fn transfer_call(&self, signature: &[u8], split: bool) -> alloc::vec::Vec<u8> {
        use alloy_sol_types::SolCall;
        if split && signature.len() == 65 {
            IFiatToken::transferWithAuthorization_1Call {
                from: self.from,
                to: self.to,
                value: self.value,
                validAfter: self.validAfter,
                validBefore: self.validBefore,
                nonce: self.nonce,
                v: signature[64],
                r: alloy_primitives::B256::from_slice(&signature[..32]),
                s: alloy_primitives::B256::from_slice(&signature[32..64]),
            }
            .abi_encode()
        } else {
            IFiatToken::transferWithAuthorization_0Call {
                from: self.from,
                to: self.to,
                value: self.value,
                validAfter: self.validAfter,
                validBefore: self.validBefore,
                nonce: self.nonce,
                signature: alloy_primitives::Bytes::copy_from_slice(signature),
            }
            .abi_encode()
        }
    }
}
