// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {Multicall} from "@openzeppelin/contracts/utils/Multicall.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";

import {IDepositCollector} from "./X402Common.sol";

/// @notice A channel's immutable terms; its id is their EIP-712 hash under this contract's
/// domain ("x402 Batch Settlement", version 1), so the id names the chain and the contract too.
struct ChannelConfig {
    address payer;
    /// Signs the payer's vouchers (ECDSA) when set; when zero the payer does (ECDSA or ERC-1271).
    address payerAuthorizer;
    address receiver;
    /// Authorizes claims and cooperative refunds: by calling, or by an EIP-712 signature.
    address receiverAuthorizer;
    address token;
    /// Seconds between a payer's `initiateWithdraw` and its `finalizeWithdraw`.
    uint40 withdrawDelay;
    bytes32 salt;
}

/// @notice The payer's promise: the receiver may claim up to `maxClaimableAmount` in all.
struct Voucher {
    ChannelConfig channel;
    uint128 maxClaimableAmount;
}

/// @notice A voucher, its signature, and the cumulative amount the receiver claims with it.
struct VoucherClaim {
    Voucher voucher;
    bytes signature;
    uint128 totalClaimed;
}

/// @title x402BatchSettlement
/// @notice Escrow for x402's `batch-settlement` scheme: unidirectional payment channels. A payer
/// deposits once (through a collector: EIP-3009 or Permit2), signs a cumulative voucher per
/// request off chain, and the receiver's authorizer claims the latest vouchers of many
/// channels in one transaction; `settle` then sends a receiver everything claimed for it in
/// one transfer. What is not claimed goes back to the payer: at once by a cooperative refund
/// (the receiver's authorizer), or after `withdrawDelay` by the payer's own withdrawal.
///
/// Written for Bursar's devnet from x402's specification and its official TypeScript
/// packages (the EVM package, 2.27), not from x402's Solidity: see contracts/x402/README.md.
///
/// Invariant, per token: this contract holds at least Σ(balance − totalClaimed) over its
/// channels plus Σ(totalClaimed − totalSettled) over its receivers. A channel's `balance` is
/// what was deposited less what was refunded or withdrawn; claims only move `totalClaimed`
/// up to it (cumulative, never down), and refunds and withdrawals only take what is above it.
///
/// Its events, errors, access rules and edge cases (a stale claim is skipped, `settle` with
/// nothing to send does nothing, a refund counts its nonce even when nothing is left to
/// return) are x402's, because Bursar reads and calls the deployed contract on Arbitrum One.
contract x402BatchSettlement is EIP712, Multicall, ReentrancyGuardTransient {
    using SafeERC20 for IERC20;

    /// @notice A channel's money: deposited less returned, and claimed so far.
    struct ChannelState {
        uint128 balance;
        uint128 totalClaimed;
    }

    /// @notice A payer's withdrawal waiting for its delay (`initiatedAt` zero: none).
    struct WithdrawalState {
        uint128 amount;
        uint40 initiatedAt;
    }

    /// @notice What has been claimed for a receiver in a token, and how much of it was sent.
    struct ReceiverState {
        uint128 totalClaimed;
        uint128 totalSettled;
    }

    /// @notice The shortest withdraw delay a channel may have: 15 minutes.
    uint40 public constant MIN_WITHDRAW_DELAY = 15 minutes;
    /// @notice The longest withdraw delay a channel may have: 30 days.
    uint40 public constant MAX_WITHDRAW_DELAY = 30 days;

    bytes32 public constant CHANNEL_CONFIG_TYPEHASH = keccak256(
        "ChannelConfig(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)"
    );
    bytes32 public constant VOUCHER_TYPEHASH = keccak256("Voucher(bytes32 channelId,uint128 maxClaimableAmount)");
    bytes32 public constant REFUND_TYPEHASH = keccak256("Refund(bytes32 channelId,uint256 nonce,uint128 amount)");
    bytes32 public constant CLAIM_ENTRY_TYPEHASH =
        keccak256("ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)");
    bytes32 public constant CLAIM_BATCH_TYPEHASH = keccak256(
        "ClaimBatch(ClaimEntry[] claims)ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)"
    );

    /// @notice Each channel's money, by channel id.
    mapping(bytes32 channelId => ChannelState) public channels;
    /// @notice The nonce the receiver authorizer's next signed refund of a channel must carry.
    mapping(bytes32 channelId => uint256) public refundNonce;
    /// @notice Each channel's pending withdrawal.
    mapping(bytes32 channelId => WithdrawalState) public pendingWithdrawals;
    /// @notice Each receiver's claimed and settled totals, per token.
    mapping(address receiver => mapping(address token => ReceiverState)) public receivers;

    /// @notice A deposit made a channel that held nothing hold something.
    event ChannelCreated(bytes32 indexed channelId, ChannelConfig config);
    /// @notice A channel was emptied with nothing claimed from it.
    event ChannelClosed(bytes32 indexed channelId, ChannelConfig config);
    /// @notice `sender` deposited `amount`; the channel's balance is now `newBalance`.
    event Deposited(bytes32 indexed channelId, address indexed sender, uint128 amount, uint128 newBalance);
    /// @notice `sender` claimed `claimAmount` more for the channel's receiver, `newTotalClaimed` in all.
    event Claimed(bytes32 indexed channelId, address indexed sender, uint128 claimAmount, uint128 newTotalClaimed);
    /// @notice `amount` claimed for `receiver` in `token` was sent to it; `sender` asked.
    event Settled(address indexed receiver, address indexed token, address indexed sender, uint128 amount);
    /// @notice `amount` went back to the payer by a cooperative refund `sender` sent.
    event Refunded(bytes32 indexed channelId, address indexed sender, uint128 amount);
    /// @notice The payer asked to withdraw `amount`, possible from `finalizeAfter`.
    event WithdrawInitiated(bytes32 indexed channelId, uint128 amount, uint40 finalizeAfter);
    /// @notice `amount` went back to the payer after the withdraw delay; `sender` finalized it.
    event WithdrawFinalized(bytes32 indexed channelId, address indexed sender, uint128 amount);

    /// @notice The channel names no payer, receiver, receiver authorizer or token; or the caller
    /// of `initiateWithdraw` is neither its payer nor its payer authorizer.
    error InvalidChannel();
    /// @notice A deposit of zero.
    error ZeroDeposit();
    /// @notice The deposit would take the channel's balance beyond 2^128 − 1.
    error DepositOverflow();
    /// @notice A voucher's, a batch's or a refund's signature is not its signer's.
    error InvalidSignature();
    /// @notice A claim in a signed batch has another receiver authorizer than the batch's signer.
    error NotReceiverAuthorizer();
    /// @notice `claim` sent by another than the channel's receiver or receiver authorizer.
    error NotAuthorizedToClaim();
    /// @notice `refund` sent by another than the channel's receiver or receiver authorizer.
    error NotAuthorizedToRefund();
    /// @notice The claim asks more than its voucher allows.
    error ClaimExceedsCeiling();
    /// @notice The claim asks more than the channel holds.
    error ClaimExceedsBalance();
    /// @notice The channel has a withdrawal pending already.
    error WithdrawalAlreadyPending();
    /// @notice The channel has no withdrawal pending.
    error WithdrawalNotPending();
    /// @notice `finalizeWithdraw` sent by another than the payer or its authorizer.
    error NotAuthorizedToFinalizeWithdraw();
    /// @notice The withdraw delay has not passed.
    error WithdrawDelayNotElapsed();
    /// @notice A withdrawal of zero.
    error NothingToWithdraw();
    /// @notice The withdrawal asks more than the channel holds above its claimed total.
    error WithdrawAmountExceedsAvailable();
    /// @notice The withdraw delay is outside [`MIN_WITHDRAW_DELAY`, `MAX_WITHDRAW_DELAY`].
    error WithdrawDelayOutOfRange();
    /// @notice A claim batch with no claim.
    error EmptyBatch();
    /// @notice The collector delivered another amount than the deposit's.
    error DepositCollectionFailed();
    /// @notice The zero address as collector.
    error InvalidCollector();
    /// @notice The signed refund carries another nonce than the channel's next one.
    error InvalidRefundNonce();
    /// @notice A refund of zero.
    error ZeroRefund();

    constructor() EIP712("x402 Batch Settlement", "1") {}

    // ---------------------------------------------------------------- deposits

    /// @notice Credits the channel `config` names with `amount`, taken from its payer by
    /// `collector` with the authorization in `collectorData`. Anyone may send it (facilitators
    /// do): the collector's authorization is the payer's consent, and this contract checks that
    /// exactly `amount` arrived. A pending withdrawal stays pending.
    function deposit(ChannelConfig calldata config, uint128 amount, address collector, bytes calldata collectorData)
        external
        nonReentrant
    {
        if (
            config.payer == address(0) || config.receiver == address(0) || config.receiverAuthorizer == address(0)
                || config.token == address(0)
        ) revert InvalidChannel();
        if (config.withdrawDelay < MIN_WITHDRAW_DELAY || config.withdrawDelay > MAX_WITHDRAW_DELAY) {
            revert WithdrawDelayOutOfRange();
        }
        if (amount == 0) revert ZeroDeposit();
        if (collector == address(0)) revert InvalidCollector();
        bytes32 channelId = getChannelId(config);
        ChannelState storage channel = channels[channelId];
        if (amount > type(uint128).max - channel.balance) revert DepositOverflow();
        channel.balance += amount;

        IERC20 token = IERC20(config.token);
        uint256 before = token.balanceOf(address(this));
        IDepositCollector(collector).collect(config.payer, config.token, amount, channelId, collectorData);
        if (token.balanceOf(address(this)) != before + amount) revert DepositCollectionFailed();

        if (channel.balance == amount && channel.totalClaimed == 0) emit ChannelCreated(channelId, config);
        emit Deposited(channelId, msg.sender, amount, channel.balance);
    }

    // ---------------------------------------------------------------- claims

    /// @notice Claims each voucher up to its `totalClaimed`; the sender must be each channel's
    /// receiver or receiver authorizer. A claim at or below what its channel has claimed
    /// already changes nothing (an old voucher is no threat, and a batch is not undone by it).
    function claim(VoucherClaim[] calldata voucherClaims) external nonReentrant {
        if (voucherClaims.length == 0) revert EmptyBatch();
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            ChannelConfig calldata config = voucherClaims[i].voucher.channel;
            if (msg.sender != config.receiverAuthorizer && msg.sender != config.receiver) {
                revert NotAuthorizedToClaim();
            }
            _claim(voucherClaims[i]);
        }
    }

    /// @notice `claim`, sent by anyone, with the receiver authorizer's EIP-712 signature of the
    /// batch (`ClaimBatch`); every channel in it must have that receiver authorizer.
    function claimWithSignature(VoucherClaim[] calldata voucherClaims, bytes calldata authorizerSignature)
        external
        nonReentrant
    {
        if (voucherClaims.length == 0) revert EmptyBatch();
        address authorizer = voucherClaims[0].voucher.channel.receiverAuthorizer;
        if (!SignatureChecker.isValidSignatureNowCalldata(authorizer, getClaimBatchDigest(voucherClaims), authorizerSignature))
        {
            revert InvalidSignature();
        }
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            if (voucherClaims[i].voucher.channel.receiverAuthorizer != authorizer) revert NotReceiverAuthorizer();
            _claim(voucherClaims[i]);
        }
    }

    /// @notice Sends `receiver` everything claimed for it in `token` and not yet sent; with
    /// nothing to send, does nothing. Anyone may call it: the money only goes to the receiver.
    function settle(address receiver, address token) external nonReentrant {
        ReceiverState storage state = receivers[receiver][token];
        uint128 amount = state.totalClaimed - state.totalSettled;
        if (amount == 0) return;
        state.totalSettled = state.totalClaimed;
        IERC20(token).safeTransfer(receiver, amount);
        emit Settled(receiver, token, msg.sender, amount);
    }

    // ---------------------------------------------------------------- the payer's way out

    /// @notice Starts the payer's withdrawal of `amount` (the payer or its payer authorizer
    /// sends it); `finalizeWithdraw` pays it after the channel's withdraw delay, which leaves
    /// the receiver time to claim the vouchers it holds.
    function initiateWithdraw(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        if (msg.sender != config.payer && msg.sender != config.payerAuthorizer) revert InvalidChannel();
        if (amount == 0) revert NothingToWithdraw();
        bytes32 channelId = getChannelId(config);
        WithdrawalState storage pending = pendingWithdrawals[channelId];
        if (pending.initiatedAt != 0) revert WithdrawalAlreadyPending();
        ChannelState storage channel = channels[channelId];
        if (amount > channel.balance - channel.totalClaimed) revert WithdrawAmountExceedsAvailable();
        pending.amount = amount;
        pending.initiatedAt = uint40(block.timestamp);
        emit WithdrawInitiated(channelId, amount, uint40(block.timestamp) + config.withdrawDelay);
    }

    /// @notice Pays the pending withdrawal to the payer once its delay has passed: the amount
    /// asked, or what is left above the claimed total if the receiver claimed meanwhile.
    function finalizeWithdraw(ChannelConfig calldata config) external nonReentrant {
        if (msg.sender != config.payer && msg.sender != config.payerAuthorizer) {
            revert NotAuthorizedToFinalizeWithdraw();
        }
        bytes32 channelId = getChannelId(config);
        WithdrawalState storage pending = pendingWithdrawals[channelId];
        if (pending.initiatedAt == 0) revert WithdrawalNotPending();
        if (block.timestamp < uint256(pending.initiatedAt) + config.withdrawDelay) revert WithdrawDelayNotElapsed();
        ChannelState storage channel = channels[channelId];
        uint128 available = channel.balance - channel.totalClaimed;
        uint128 amount = pending.amount < available ? pending.amount : available;
        delete pendingWithdrawals[channelId];
        channel.balance -= amount;
        emit WithdrawFinalized(channelId, msg.sender, amount);
        if (channel.balance == 0 && channel.totalClaimed == 0) emit ChannelClosed(channelId, config);
        if (amount != 0) IERC20(config.token).safeTransfer(config.payer, amount);
    }

    // ---------------------------------------------------------------- cooperative refunds

    /// @notice Returns `amount` (or what is left above the claimed total, if less) to the payer
    /// at once; the channel's receiver or receiver authorizer sends it.
    function refund(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        if (msg.sender != config.receiverAuthorizer && msg.sender != config.receiver) revert NotAuthorizedToRefund();
        _refund(config, getChannelId(config), amount);
    }

    /// @notice `refund`, sent by anyone, with the receiver authorizer's EIP-712 signature of
    /// `Refund(channelId, nonce, amount)`; `nonce` must be the channel's `refundNonce`.
    function refundWithSignature(
        ChannelConfig calldata config,
        uint128 amount,
        uint256 nonce,
        bytes calldata receiverAuthorizerSignature
    ) external nonReentrant {
        bytes32 channelId = getChannelId(config);
        if (nonce != refundNonce[channelId]) revert InvalidRefundNonce();
        bytes32 digest = getRefundDigest(channelId, nonce, amount);
        if (!SignatureChecker.isValidSignatureNowCalldata(config.receiverAuthorizer, digest, receiverAuthorizerSignature))
        {
            revert InvalidSignature();
        }
        _refund(config, channelId, amount);
    }

    // ---------------------------------------------------------------- views

    /// @notice The channel id of `config`: its EIP-712 hash under this contract's domain.
    function getChannelId(ChannelConfig calldata config) public view returns (bytes32) {
        return _hashTypedDataV4(keccak256(abi.encode(CHANNEL_CONFIG_TYPEHASH, config)));
    }

    /// @notice The digest a payer (or its authorizer) signs for a voucher.
    function getVoucherDigest(bytes32 channelId, uint128 maxClaimableAmount) public view returns (bytes32) {
        return _hashTypedDataV4(keccak256(abi.encode(VOUCHER_TYPEHASH, channelId, maxClaimableAmount)));
    }

    /// @notice The digest a receiver authorizer signs for a refund.
    function getRefundDigest(bytes32 channelId, uint256 nonce, uint128 amount) public view returns (bytes32) {
        return _hashTypedDataV4(keccak256(abi.encode(REFUND_TYPEHASH, channelId, nonce, amount)));
    }

    /// @notice The digest a receiver authorizer signs for a batch of claims.
    function getClaimBatchDigest(VoucherClaim[] calldata voucherClaims) public view returns (bytes32) {
        bytes32[] memory entries = new bytes32[](voucherClaims.length);
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            entries[i] = keccak256(
                abi.encode(
                    CLAIM_ENTRY_TYPEHASH,
                    getChannelId(voucherClaims[i].voucher.channel),
                    voucherClaims[i].voucher.maxClaimableAmount,
                    voucherClaims[i].totalClaimed
                )
            );
        }
        return _hashTypedDataV4(keccak256(abi.encode(CLAIM_BATCH_TYPEHASH, keccak256(abi.encodePacked(entries)))));
    }

    // ---------------------------------------------------------------- internals

    function _claim(VoucherClaim calldata voucherClaim) private {
        ChannelConfig calldata config = voucherClaim.voucher.channel;
        bytes32 channelId = getChannelId(config);
        ChannelState storage channel = channels[channelId];
        uint128 total = voucherClaim.totalClaimed;
        uint128 claimed = channel.totalClaimed;
        if (total <= claimed) return;
        uint128 ceiling = voucherClaim.voucher.maxClaimableAmount;
        if (total > ceiling) revert ClaimExceedsCeiling();
        if (total > channel.balance) revert ClaimExceedsBalance();
        if (!_isVoucherSigner(config, getVoucherDigest(channelId, ceiling), voucherClaim.signature)) {
            revert InvalidSignature();
        }
        uint128 amount = total - claimed;
        channel.totalClaimed = total;
        receivers[config.receiver][config.token].totalClaimed += amount;
        emit Claimed(channelId, msg.sender, amount, total);
    }

    /// The payer authorizer's ECDSA signature when it is set (a key that signs off chain,
    /// checked without a call); otherwise the payer's, ECDSA or ERC-1271 by its code.
    function _isVoucherSigner(ChannelConfig calldata config, bytes32 digest, bytes calldata signature)
        private
        view
        returns (bool)
    {
        if (config.payerAuthorizer != address(0)) {
            return ECDSA.recoverCalldata(digest, signature) == config.payerAuthorizer;
        }
        return SignatureChecker.isValidSignatureNowCalldata(config.payer, digest, signature);
    }

    /// Counts the refund's nonce first (so a signed refund is spent even when nothing is left
    /// to return), then returns what it can and shortens a pending withdrawal by as much.
    function _refund(ChannelConfig calldata config, bytes32 channelId, uint128 amount) private {
        if (amount == 0) revert ZeroRefund();
        unchecked {
            refundNonce[channelId]++;
        }
        ChannelState storage channel = channels[channelId];
        uint128 available = channel.balance - channel.totalClaimed;
        uint128 refunded = amount < available ? amount : available;
        if (refunded == 0) return;
        channel.balance -= refunded;
        WithdrawalState storage pending = pendingWithdrawals[channelId];
        if (pending.initiatedAt != 0) {
            if (refunded >= pending.amount) delete pendingWithdrawals[channelId];
            else pending.amount -= refunded;
        }
        emit Refunded(channelId, msg.sender, refunded);
        if (channel.balance == 0 && channel.totalClaimed == 0) emit ChannelClosed(channelId, config);
        IERC20(config.token).safeTransfer(config.payer, refunded);
    }
}
