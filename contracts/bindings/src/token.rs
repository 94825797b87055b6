//! TestToken: a 6-decimal ERC-20 stablecoin with EIP-2612 permit for local networks.

alloy_sol_types::sol! {
    #![sol(all_derives)]
    /// The external interface of TestToken (see `contracts/test-token`).
    interface ITestToken {
        function name() external pure returns (string);
        function symbol() external pure returns (string);
        function decimals() external pure returns (uint8);
        function totalSupply() external view returns (uint256);
        function balanceOf(address account) external view returns (uint256);
        function allowance(address owner, address spender) external view returns (uint256);
        function transfer(address to, uint256 value) external returns (bool);
        function transferFrom(address from, address to, uint256 value) external returns (bool);
        function approve(address spender, uint256 value) external returns (bool);
        function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s) external;
        function nonces(address owner) external view returns (uint256);
        function DOMAIN_SEPARATOR() external view returns (bytes32);
        function mint(address to, uint256 value) external;
        function owner() external view returns (address);
        function transferOwnership(address newOwner) external;

        event Transfer(address indexed from, address indexed to, uint256 value);
        event Approval(address indexed owner, address indexed spender, uint256 value);
        event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);

        error ERC20InsufficientBalance(address sender, uint256 balance, uint256 needed);
        error ERC20InvalidSender(address sender);
        error ERC20InvalidReceiver(address receiver);
        error ERC20InsufficientAllowance(address spender, uint256 allowance, uint256 needed);
        error ERC20InvalidApprover(address approver);
        error ERC20InvalidSpender(address spender);
        error ERC2612ExpiredSignature(uint256 deadline);
        error ERC2612InvalidSigner(address signer, address owner);
        error OwnableUnauthorizedAccount(address account);
        error OwnableInvalidOwner(address owner);
        /// A sum that does not fit in 256 bits (total supply on `mint`; unreachable otherwise).
        error TokenOverflow(uint256 current, uint256 increment);
    }
}
