//! x402's own EVM contracts, at the addresses x402 deploys them to on every chain: the
//! `batch-settlement` escrow with its two deposit collectors, and the `upto` scheme's Permit2
//! proxy. The devnet installs Bursar's builds of them (`contracts/x402`, Solidity written from
//! x402's specification); on Arbitrum One they are x402's.

use alloc::vec::Vec;

use alloy_primitives::{address, keccak256, Address, B256, U256};
use alloy_sol_types::{Eip712Domain, SolStruct, SolValue};

/// `x402BatchSettlement`: payment channels, claims in batches, settlement by receiver.
pub const BATCH_SETTLEMENT: Address = address!("4020074e9dF2ce1deE5A9C1b5c3f541D02a10003");
/// `ERC3009DepositCollector`: deposits by EIP-3009 `receiveWithAuthorization`.
pub const ERC3009_DEPOSIT_COLLECTOR: Address = address!("4020806089470a89826cB9fB1f4059150b550004");
/// `Permit2DepositCollector`: deposits by Permit2 witness transfers.
pub const PERMIT2_DEPOSIT_COLLECTOR: Address = address!("4020425FAf3B746C082C2f942b4E5159887B0005");
/// `x402UptoPermit2Proxy`: the `upto` scheme's settlements.
pub const UPTO_PERMIT2_PROXY: Address = address!("4020A4f3b7b90ccA423B9fabCc0CE57C6C240002");

/// A channel's shortest withdraw delay (15 minutes) and longest (30 days), in seconds.
pub const WITHDRAW_DELAY_RANGE: core::ops::RangeInclusive<u64> = 900..=2_592_000;

/// `keccak256` of the escrow's EIP-712 domain name, "x402 Batch Settlement".
pub const DOMAIN_NAME_HASH: B256 = crate::keccak(b"x402 Batch Settlement");
/// `keccak256` of its domain version, "1".
pub const DOMAIN_VERSION_HASH: B256 = crate::keccak(b"1");
/// Type hash of [`ChannelConfig`]: a channel's id is its EIP-712 hash.
pub const CHANNEL_CONFIG_TYPEHASH: B256 = crate::keccak(
    b"ChannelConfig(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)",
);
/// Type hash of EIP-3009 [`ReceiveWithAuthorization`], as USDC implements it.
pub const RECEIVE_WITH_AUTHORIZATION_TYPEHASH: B256 = crate::keccak(
    b"ReceiveWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)",
);

alloy_sol_types::sol! {
    #![sol(all_derives)]

    /// A channel's immutable terms (its id is their EIP-712 hash, [`channel_id`]).
    struct ChannelConfig {
        address payer;
        address payerAuthorizer;
        address receiver;
        address receiverAuthorizer;
        address token;
        uint40 withdrawDelay;
        bytes32 salt;
    }

    /// What a payer (or its payer authorizer) signs per request: the cumulative ceiling.
    struct Voucher {
        bytes32 channelId;
        uint128 maxClaimableAmount;
    }

    /// What a receiver authorizer signs to return a channel's unclaimed money to its payer.
    struct Refund {
        bytes32 channelId;
        uint256 nonce;
        uint128 amount;
    }

    /// One entry of a claim batch a receiver authorizer signs.
    struct ClaimEntry {
        bytes32 channelId;
        uint128 maxClaimableAmount;
        uint128 totalClaimed;
    }

    /// A claim batch a receiver authorizer signs (`claimWithSignature`).
    struct ClaimBatch {
        ClaimEntry[] claims;
    }

    /// The permit witness of a Permit2 deposit: the channel it funds.
    struct DepositWitness {
        bytes32 channelId;
    }

    /// EIP-3009's `ReceiveWithAuthorization`, signed under the token's domain: how a deposit
    /// through [`ERC3009_DEPOSIT_COLLECTOR`] is authorized (`to` is the collector, the nonce
    /// [`erc3009_deposit_nonce`]).
    struct ReceiveWithAuthorization {
        address from;
        address to;
        uint256 value;
        uint256 validAfter;
        uint256 validBefore;
        bytes32 nonce;
    }

    /// x402BatchSettlement, as x402's packages and Bursar call it.
    interface IX402BatchSettlement {
        struct VoucherFields {
            ChannelConfig channel;
            uint128 maxClaimableAmount;
        }
        struct VoucherClaim {
            VoucherFields voucher;
            bytes signature;
            uint128 totalClaimed;
        }

        function multicall(bytes[] data) external returns (bytes[] results);
        function deposit(ChannelConfig config, uint128 amount, address collector, bytes collectorData) external;
        function claim(VoucherClaim[] voucherClaims) external;
        function claimWithSignature(VoucherClaim[] voucherClaims, bytes authorizerSignature) external;
        function settle(address receiver, address token) external;
        function initiateWithdraw(ChannelConfig config, uint128 amount) external;
        function finalizeWithdraw(ChannelConfig config) external;
        function refund(ChannelConfig config, uint128 amount) external;
        function refundWithSignature(ChannelConfig config, uint128 amount, uint256 nonce, bytes receiverAuthorizerSignature) external;
        function getChannelId(ChannelConfig config) external view returns (bytes32);
        function getVoucherDigest(bytes32 channelId, uint128 maxClaimableAmount) external view returns (bytes32);
        function getRefundDigest(bytes32 channelId, uint256 nonce, uint128 amount) external view returns (bytes32);
        function getClaimBatchDigest(VoucherClaim[] voucherClaims) external view returns (bytes32);
        function channels(bytes32 channelId) external view returns (uint128 balance, uint128 totalClaimed);
        function pendingWithdrawals(bytes32 channelId) external view returns (uint128 amount, uint40 initiatedAt);
        function receivers(address receiver, address token) external view returns (uint128 totalClaimed, uint128 totalSettled);
        function refundNonce(bytes32 channelId) external view returns (uint256);

        event ChannelCreated(bytes32 indexed channelId, ChannelConfig config);
        event ChannelClosed(bytes32 indexed channelId, ChannelConfig config);
        event Deposited(bytes32 indexed channelId, address indexed sender, uint128 amount, uint128 newBalance);
        event Claimed(bytes32 indexed channelId, address indexed sender, uint128 claimAmount, uint128 newTotalClaimed);
        event Settled(address indexed receiver, address indexed token, address indexed sender, uint128 amount);
        event Refunded(bytes32 indexed channelId, address indexed sender, uint128 amount);
        event WithdrawInitiated(bytes32 indexed channelId, uint128 amount, uint40 finalizeAfter);
        event WithdrawFinalized(bytes32 indexed channelId, address indexed sender, uint128 amount);

        error InvalidChannel();
        error ZeroDeposit();
        error DepositOverflow();
        error InvalidSignature();
        error NotReceiverAuthorizer();
        error NotAuthorizedToClaim();
        error NotAuthorizedToRefund();
        error ClaimExceedsCeiling();
        error ClaimExceedsBalance();
        error WithdrawalAlreadyPending();
        error WithdrawalNotPending();
        error NotAuthorizedToFinalizeWithdraw();
        error WithdrawDelayNotElapsed();
        error NothingToWithdraw();
        error WithdrawAmountExceedsAvailable();
        error WithdrawDelayOutOfRange();
        error EmptyBatch();
        error DepositCollectionFailed();
        error InvalidCollector();
        error InvalidRefundNonce();
        error ZeroRefund();
    }

    /// How the escrow takes a deposit: it calls the collector the depositor names.
    interface IDepositCollector {
        function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes collectorData) external;
    }

    /// x402UptoPermit2Proxy: settles at most what the payer permitted, by the facilitator it named.
    interface IX402UptoPermit2Proxy {
        struct TokenPermissions {
            address token;
            uint256 amount;
        }
        struct PermitTransferFrom {
            TokenPermissions permitted;
            uint256 nonce;
            uint256 deadline;
        }
        struct Witness {
            address to;
            address facilitator;
            uint256 validAfter;
        }

        function PERMIT2() external view returns (address);
        function WITNESS_TYPEHASH() external view returns (bytes32);
        function WITNESS_TYPE_STRING() external view returns (string);
        function settle(PermitTransferFrom permit, uint256 amount, address owner, Witness witness, bytes signature) external;

        event Settled();

        error AmountExceedsPermitted();
        error InvalidAmount();
        error InvalidDestination();
        error InvalidOwner();
        error PaymentTooEarly();
        error UnauthorizedFacilitator();
    }
}

/// The EIP-712 domain of [`BATCH_SETTLEMENT`] on chain `chain_id`: channel ids, vouchers,
/// refunds and claim batches are all hashed under it.
pub fn batch_settlement_domain(chain_id: u64) -> Eip712Domain {
    alloy_sol_types::eip712_domain! {
        name: "x402 Batch Settlement",
        version: "1",
        chain_id: chain_id,
        verifying_contract: BATCH_SETTLEMENT,
    }
}

/// A channel's id on chain `chain_id`: the EIP-712 hash of its config.
pub fn channel_id(config: &ChannelConfig, chain_id: u64) -> B256 {
    config.eip712_signing_hash(&batch_settlement_domain(chain_id))
}

/// The digest a payer authorizer signs for a voucher of `channel_id` up to `max_claimable`.
pub fn voucher_digest(channel_id: B256, max_claimable: u128, chain_id: u64) -> B256 {
    Voucher {
        channelId: channel_id,
        maxClaimableAmount: max_claimable,
    }
    .eip712_signing_hash(&batch_settlement_domain(chain_id))
}

/// The EIP-3009 nonce of a deposit into `channel_id` through [`ERC3009_DEPOSIT_COLLECTOR`]:
/// `keccak256(abi.encode(channelId, salt))`, so an authorization funds one channel only.
pub fn erc3009_deposit_nonce(channel_id: B256, salt: U256) -> B256 {
    keccak256((channel_id, salt).abi_encode_params())
}

/// The `collectorData` of a deposit through [`ERC3009_DEPOSIT_COLLECTOR`]: `abi.encode(
/// validAfter, validBefore, salt, signature)`.
pub fn erc3009_collector_data(
    valid_after: U256,
    valid_before: U256,
    salt: U256,
    signature: &[u8],
) -> Vec<u8> {
    (
        valid_after,
        valid_before,
        salt,
        alloy_primitives::Bytes::copy_from_slice(signature),
    )
        .abi_encode_params()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_constants_are_the_types_hashes() {
        assert_eq!(
            keccak256(ChannelConfig::eip712_encode_type().as_bytes()),
            CHANNEL_CONFIG_TYPEHASH
        );
        assert_eq!(
            keccak256(ReceiveWithAuthorization::eip712_encode_type().as_bytes()),
            RECEIVE_WITH_AUTHORIZATION_TYPEHASH
        );
        let domain = batch_settlement_domain(7);
        assert_eq!(domain.name.as_deref(), Some("x402 Batch Settlement"));
        assert_eq!(keccak256("x402 Batch Settlement"), DOMAIN_NAME_HASH);
        assert_eq!(keccak256("1"), DOMAIN_VERSION_HASH);
    }
}
