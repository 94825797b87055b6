// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity ^0.8.24;

import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";

import {ISignatureTransfer, PermitFailures, X402Addresses} from "./X402Common.sol";

/// @title x402UptoPermit2Proxy
/// @notice x402's `upto` scheme: the payer signs a Permit2 transfer of at most
/// `permitted.amount` to this proxy, with a witness naming the payee (`to`), the one
/// facilitator that may settle it and the time from which it may; the facilitator settles the
/// amount the resource actually cost, anything up to the maximum. Permit2's nonce makes each
/// authorization good for one settlement.
contract x402UptoPermit2Proxy is ReentrancyGuardTransient, PermitFailures {
    /// @notice What the payer signs beside the permit.
    struct Witness {
        address to;
        address facilitator;
        uint256 validAfter;
    }

    /// @notice An EIP-2612 permit of the token to Permit2, for a payer that has not approved it.
    struct EIP2612Permit {
        uint256 value;
        uint256 deadline;
        bytes32 r;
        bytes32 s;
        uint8 v;
    }

    /// @notice `Witness(address to,address facilitator,uint256 validAfter)`.
    bytes32 public constant WITNESS_TYPEHASH = keccak256("Witness(address to,address facilitator,uint256 validAfter)");

    /// @notice The witness part of Permit2's typed data, as Permit2 wants it.
    string public constant WITNESS_TYPE_STRING =
        "Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,address facilitator,uint256 validAfter)";

    /// @notice Permit2, at its address on every chain.
    ISignatureTransfer public constant PERMIT2 = ISignatureTransfer(X402Addresses.PERMIT2);

    /// @notice A payment was settled.
    event Settled();
    /// @notice A payment was settled after an EIP-2612 permit.
    event SettledWithPermit();

    /// @notice A settlement of zero.
    error InvalidAmount();
    /// @notice The settled amount is above the permitted maximum.
    error AmountExceedsPermitted();
    /// @notice The witness names no payee.
    error InvalidDestination();
    /// @notice No payer.
    error InvalidOwner();
    /// @notice Unused here (Permit2's address is a constant); kept for the ABI x402 publishes.
    error InvalidPermit2Address();
    /// @notice Before the witness's `validAfter`.
    error PaymentTooEarly();
    /// @notice The EIP-2612 permit is for another amount than the Permit2 permit.
    error Permit2612AmountMismatch();
    /// @notice The caller is not the facilitator the payer named.
    error UnauthorizedFacilitator();

    /// @notice Transfers `amount` (at most the permitted maximum) from `owner` to `witness.to`.
    function settle(
        ISignatureTransfer.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external nonReentrant {
        _authorize(permit, amount, witness);
        _settle(permit, amount, owner, witness, signature);
        emit Settled();
    }

    /// @notice `settle` after an EIP-2612 permit of the token to Permit2 (tried; a failure is
    /// told in an event and leaves the outcome to Permit2's allowance).
    function settleWithPermit(
        EIP2612Permit calldata permit2612,
        ISignatureTransfer.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external nonReentrant {
        _authorize(permit, amount, witness);
        if (permit2612.value != permit.permitted.amount) revert Permit2612AmountMismatch();
        _tryPermit(
            permit.permitted.token,
            owner,
            address(PERMIT2),
            permit2612.value,
            permit2612.deadline,
            permit2612.v,
            permit2612.r,
            permit2612.s
        );
        _settle(permit, amount, owner, witness, signature);
        emit SettledWithPermit();
    }

    /// Only the facilitator the payer named settles, and never more than it permitted.
    function _authorize(ISignatureTransfer.PermitTransferFrom calldata permit, uint256 amount, Witness calldata witness)
        private
        view
    {
        if (amount > permit.permitted.amount) revert AmountExceedsPermitted();
        if (msg.sender != witness.facilitator) revert UnauthorizedFacilitator();
    }

    function _settle(
        ISignatureTransfer.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) private {
        if (amount == 0) revert InvalidAmount();
        if (owner == address(0)) revert InvalidOwner();
        if (witness.to == address(0)) revert InvalidDestination();
        if (block.timestamp < witness.validAfter) revert PaymentTooEarly();
        PERMIT2.permitWitnessTransferFrom(
            permit,
            ISignatureTransfer.SignatureTransferDetails({to: witness.to, requestedAmount: amount}),
            owner,
            keccak256(abi.encode(WITNESS_TYPEHASH, witness)),
            WITNESS_TYPE_STRING,
            signature
        );
    }
}
