//! SessionGateway: owner-signed entry points into SessionWallet (EIP-712, ERC-1271, permit).

alloy_sol_types::sol! {
    #![sol(all_derives)]

    /// The external interface of SessionGateway (see `contracts/session-gateway`).
    ///
    /// Verifies owners' EIP-712 signatures (`OpenSession`, `PendingDecision`; EOAs or ERC-1271
    /// contracts) and forwards to the SessionWallet it is bound to. The binder named at
    /// construction (the deployer) binds it once, to a wallet that names this gateway; after that
    /// nobody holds any power over it. Failures inside the wallet come back as
    /// `GatewayWalletCallFailed(reason)`, `reason` being the wallet's own custom error.
    interface ISessionGateway {
        function bind(address wallet) external;
        function openSessionWithSig(address owner, address sessionKey, address guardian, address token, uint256 deposit, uint256 perPaymentCap, uint256 periodBudget, uint64 periodSeconds, uint256 coSignThreshold, uint64 validAfter, uint64 expiresAt, uint64 leaseSeconds, address leaseKeeper, uint256 allowlistId, bytes32 metadata, uint256 nonce, uint256 deadline, bytes ownerSignature, bytes permitSignature) external returns (uint256);
        function decidePendingWithSig(uint256 pendingId, bool approve, uint256 nonce, uint256 deadline, bytes signature) external returns (uint256);
        function wallet() external view returns (address);
        function isOwnerNonceUsed(address owner, uint256 nonce) external view returns (bool);
        function domainSeparator() external view returns (bytes32);

        event GatewayBound(address indexed wallet);

        error GatewayUnauthorized(address caller);
        error GatewayAlreadyBound(address wallet);
        error GatewayWalletMismatch(address wallet);
        error GatewayNotBound();
        error GatewayInvalidParameter(uint8 parameter);
        error GatewayDeadlinePassed(uint256 deadline);
        error GatewayNonceUsed(uint256 nonce);
        error GatewayInvalidSignature();
        error GatewayUnknownPending(uint256 pendingId);
        error GatewayWalletCallFailed(bytes reason);
    }
}

impl crate::eip712::OpenSession {
    /// The `openSessionWithSig` call carrying these terms with the owner's `owner_signature` of
    /// them and its EIP-2612 `permit_signature` (empty when the wallet is already approved).
    pub fn with_sig_call(
        &self,
        owner_signature: alloy_primitives::Bytes,
        permit_signature: alloy_primitives::Bytes,
    ) -> ISessionGateway::openSessionWithSigCall {
        ISessionGateway::openSessionWithSigCall {
            owner: self.owner,
            sessionKey: self.sessionKey,
            guardian: self.guardian,
            token: self.token,
            deposit: self.deposit,
            perPaymentCap: self.perPaymentCap,
            periodBudget: self.periodBudget,
            periodSeconds: self.periodSeconds,
            coSignThreshold: self.coSignThreshold,
            validAfter: self.validAfter,
            expiresAt: self.expiresAt,
            leaseSeconds: self.leaseSeconds,
            leaseKeeper: self.leaseKeeper,
            allowlistId: self.allowlistId,
            metadata: self.metadata,
            nonce: self.nonce,
            deadline: self.deadline,
            ownerSignature: owner_signature,
            permitSignature: permit_signature,
        }
    }
}
