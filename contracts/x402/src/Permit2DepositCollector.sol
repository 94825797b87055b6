// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity ^0.8.24;

import {IDepositCollector, ISignatureTransfer, PermitFailures, X402Addresses} from "./X402Common.sol";

/// @title Permit2DepositCollector
/// @notice Deposits into `x402BatchSettlement` with a Permit2 `permitWitnessTransferFrom` whose
/// spender is this collector and whose witness is the channel id, so a permit funds one channel
/// only. An EIP-2612 permit for Permit2 may come along (for a payer that has not approved
/// Permit2 yet); it is tried, and a failure is told in an event and otherwise ignored (someone
/// may have used it already): Permit2's transfer then decides.
contract Permit2DepositCollector is IDepositCollector, PermitFailures {
    /// @notice The settlement contract, the only caller.
    address public constant x402BatchSettlement = X402Addresses.BATCH_SETTLEMENT;
    /// @notice Permit2, at its address on every chain.
    ISignatureTransfer public constant PERMIT2 = ISignatureTransfer(X402Addresses.PERMIT2);

    /// @notice `DepositWitness(bytes32 channelId)`.
    bytes32 public constant DEPOSIT_WITNESS_TYPEHASH = keccak256("DepositWitness(bytes32 channelId)");

    /// @notice The witness part of Permit2's typed data, as Permit2 wants it.
    string public constant DEPOSIT_WITNESS_TYPE_STRING =
        "DepositWitness witness)DepositWitness(bytes32 channelId)TokenPermissions(address token,uint256 amount)";

    /// @notice Called by another than the settlement contract.
    error OnlyX402BatchSettlement();
    /// @notice The EIP-2612 permit is for another amount than the deposit.
    error Permit2612AmountMismatch();

    /// @inheritdoc IDepositCollector
    /// @dev `collectorData` is `abi.encode(uint256 nonce, uint256 deadline, bytes
    /// permit2Signature, bytes eip2612PermitData)`, the last empty or `abi.encode(uint256 value,
    /// uint256 deadline, uint8 v, bytes32 r, bytes32 s)`.
    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata collectorData)
        external
    {
        if (msg.sender != x402BatchSettlement) revert OnlyX402BatchSettlement();
        (uint256 nonce, uint256 deadline, bytes memory signature, bytes memory eip2612) =
            abi.decode(collectorData, (uint256, uint256, bytes, bytes));
        if (eip2612.length != 0) _permitPermit2(token, payer, amount, eip2612);
        PERMIT2.permitWitnessTransferFrom(
            ISignatureTransfer.PermitTransferFrom({
                permitted: ISignatureTransfer.TokenPermissions({token: token, amount: amount}),
                nonce: nonce,
                deadline: deadline
            }),
            ISignatureTransfer.SignatureTransferDetails({to: msg.sender, requestedAmount: amount}),
            payer,
            keccak256(abi.encode(DEPOSIT_WITNESS_TYPEHASH, channelId)),
            DEPOSIT_WITNESS_TYPE_STRING,
            signature
        );
    }

    /// Tries the payer's EIP-2612 permit of `token` to Permit2, for the deposit's amount.
    function _permitPermit2(address token, address payer, uint256 amount, bytes memory eip2612) private {
        (uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s) =
            abi.decode(eip2612, (uint256, uint256, uint8, bytes32, bytes32));
        if (value != amount) revert Permit2612AmountMismatch();
        _tryPermit(token, payer, address(PERMIT2), value, deadline, v, r, s);
    }
}
