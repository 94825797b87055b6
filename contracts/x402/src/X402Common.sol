// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity ^0.8.24;

import {IERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Permit.sol";

/// @notice How `x402BatchSettlement.deposit` moves a payer's tokens into escrow: it calls
/// `collect` on the collector the depositor names and credits the channel with what arrived.
/// The settlement contract measures its own balance around the call, so a collector can add
/// no credit it did not deliver.
interface IDepositCollector {
    /// @notice Moves `amount` of `token` from `payer` to the settlement contract, for the
    /// channel `channelId`, using the authorization in `collectorData`.
    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata collectorData)
        external;
}

/// @notice Permit2's signature-based transfers (Uniswap's `ISignatureTransfer`), the part the
/// collectors and the `upto` proxy call.
interface ISignatureTransfer {
    struct TokenPermissions {
        address token;
        uint256 amount;
    }

    struct PermitTransferFrom {
        TokenPermissions permitted;
        uint256 nonce;
        uint256 deadline;
    }

    struct SignatureTransferDetails {
        address to;
        uint256 requestedAmount;
    }

    function permitWitnessTransferFrom(
        PermitTransferFrom calldata permit,
        SignatureTransferDetails calldata transferDetails,
        address owner,
        bytes32 witness,
        string calldata witnessTypeString,
        bytes calldata signature
    ) external;
}

/// @notice EIP-3009's `receiveWithAuthorization` with a `bytes` signature (USDC v2.2: ECDSA
/// for an account without code, ERC-1271 for one with).
interface IERC3009 {
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes calldata signature
    ) external;
}

/// @notice Where x402's contracts live: the same addresses on every chain.
library X402Addresses {
    address internal constant BATCH_SETTLEMENT = 0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003;
    address internal constant ERC3009_DEPOSIT_COLLECTOR = 0x4020806089470a89826cB9fB1f4059150b550004;
    address internal constant PERMIT2_DEPOSIT_COLLECTOR = 0x4020425FAf3B746C082C2f942b4E5159887B0005;
    address internal constant UPTO_PERMIT2_PROXY = 0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002;
    address internal constant PERMIT2 = 0x000000000022D473030F116dDEE9F6B43aC78BA3;
}

/// @notice An EIP-2612 permit tried on the payer's behalf, whose failure is told, not fatal: a
/// permit someone already used fails, and the allowance it gave still stands.
abstract contract PermitFailures {
    event EIP2612PermitFailedWithReason(address indexed token, address indexed owner, string reason);
    event EIP2612PermitFailedWithPanic(address indexed token, address indexed owner, uint256 errorCode);
    event EIP2612PermitFailedWithData(address indexed token, address indexed owner, bytes data);

    function _tryPermit(
        address token,
        address owner,
        address spender,
        uint256 value,
        uint256 deadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) internal {
        try IERC20Permit(token).permit(owner, spender, value, deadline, v, r, s) {}
        catch Error(string memory reason) {
            emit EIP2612PermitFailedWithReason(token, owner, reason);
        } catch Panic(uint256 errorCode) {
            emit EIP2612PermitFailedWithPanic(token, owner, errorCode);
        } catch (bytes memory data) {
            emit EIP2612PermitFailedWithData(token, owner, data);
        }
    }
}
