//! The standard interfaces the contracts call: ERC-20, EIP-2612 and ERC-1271.

alloy_sol_types::sol! {
    #![sol(all_derives)]
    /// ERC-20 as the wallet uses it.
    interface IERC20 {
        function transfer(address to, uint256 amount) external returns (bool);
        function transferFrom(address from, address to, uint256 amount) external returns (bool);
        function balanceOf(address account) external view returns (uint256);
    }

    /// EIP-2612 `permit`.
    interface IERC20Permit {
        function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s) external;
    }

    /// ERC-1271: signature validation by contracts; returns the selector when valid.
    interface IERC1271 {
        function isValidSignature(bytes32 hash, bytes signature) external view returns (bytes4 magicValue);
    }
}
