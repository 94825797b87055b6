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
        function redeemDelegations(bytes[] permissionContexts, bytes32[] modes, bytes[] executionCallDatas) external;

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
        error GatewayDelegationNeedsApproval(uint256 sessionId);
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

/// ERC-7579's execution mode for one call with default behaviour: the only mode
/// `redeemDelegations` redeems.
pub const SINGLE_CALL: alloy_primitives::B256 = alloy_primitives::B256::ZERO;

impl crate::eip712::PaymentIntent {
    /// The ERC-7710 permission context `SessionGateway.redeemDelegations` redeems as this
    /// intent with the session key's `signature` of it: `sessionId ‖ purpose ‖ nonce ‖
    /// deadline ‖ signature`, packed (the payee and amount come from the execution, and the
    /// signature binds them).
    pub fn permission_context(&self, signature: &[u8]) -> alloy_primitives::Bytes {
        let words = [self.session, self.purpose.into(), self.nonce, self.deadline];
        let mut context = alloc::vec::Vec::with_capacity(4 * 32 + signature.len());
        for w in words {
            context.extend_from_slice(&w.to_be_bytes::<32>());
        }
        context.extend_from_slice(signature);
        context.into()
    }
}

/// ERC-7579 single-call execution data of `token.transfer(to, amount)`: `token ‖ 0 ‖
/// transfer(to, amount)`, packed — what an x402 facilitator builds from the requirements
/// (asset, payTo, amount) for `redeemDelegations`.
pub fn transfer_execution(
    token: alloy_primitives::Address,
    to: alloy_primitives::Address,
    amount: alloy_primitives::U256,
) -> alloy_primitives::Bytes {
    use alloy_sol_types::SolCall;
    let transfer = crate::token::ITestToken::transferCall { to, value: amount };
    let mut execution = alloc::vec::Vec::with_capacity(20 + 32 + 68);
    execution.extend_from_slice(token.as_slice());
    execution.extend_from_slice(&[0; 32]);
    execution.extend_from_slice(&transfer.abi_encode());
    execution.into()
}
