// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

import {IDepositCollector, IERC3009, X402Addresses} from "./X402Common.sol";

/// @title ERC3009DepositCollector
/// @notice Gasless deposits into `x402BatchSettlement` with an EIP-3009
/// `receiveWithAuthorization` the payer signed to this collector. The authorization's nonce is
/// `keccak256(abi.encode(channelId, salt))`, so it funds one channel only; and only the
/// settlement contract may spend it, so an authorization cannot be moved anywhere but into the
/// channel it names.
contract ERC3009DepositCollector is IDepositCollector {
    using SafeERC20 for IERC20;

    /// @notice The settlement contract, the only caller.
    address public constant x402BatchSettlement = X402Addresses.BATCH_SETTLEMENT;

    /// @notice Called by another than the settlement contract.
    error OnlyX402BatchSettlement();

    /// @inheritdoc IDepositCollector
    /// @dev `collectorData` is `abi.encode(uint256 validAfter, uint256 validBefore, uint256
    /// salt, bytes signature)`.
    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata collectorData)
        external
    {
        if (msg.sender != x402BatchSettlement) revert OnlyX402BatchSettlement();
        (uint256 validAfter, uint256 validBefore, uint256 salt, bytes memory signature) =
            abi.decode(collectorData, (uint256, uint256, uint256, bytes));
        bytes32 nonce = keccak256(abi.encode(channelId, salt));
        IERC3009(token).receiveWithAuthorization(payer, address(this), amount, validAfter, validBefore, nonce, signature);
        IERC20(token).safeTransfer(msg.sender, amount);
    }
}
