//! What owners and agents sign, as the calls that carry it: an agent's payment intent (EIP-712,
//! the session wallet's domain) and an owner's `OpenSession` with the EIP-2612 permit that lets
//! the wallet pull the deposit (the gateway's and the token's domains).

use alloy_primitives::{Address, U256};
use alloy_sol_types::SolStruct;
use bursar_bindings::eip712::{
    OpenSession, PaymentIntent, Permit, SESSION_GATEWAY_DOMAIN, SESSION_WALLET_DOMAIN,
    TEST_TOKEN_DOMAIN,
};
use bursar_bindings::gateway::ISessionGateway;
use bursar_bindings::wallet::ISessionWallet;

use crate::Key;

/// The `pay` call carrying `intent`, signed by the session key `agent` for the wallet at
/// `wallet` on `chain_id` (what an agent hands the relayer).
pub fn signed_pay(
    agent: &Key,
    chain_id: u64,
    wallet: Address,
    intent: PaymentIntent,
) -> ISessionWallet::payCall {
    let domain = SESSION_WALLET_DOMAIN.at(chain_id, wallet);
    let signature = agent.sign_hash_rsv(&intent.eip712_signing_hash(&domain));
    intent.pay_call(signature.into())
}

/// The `openSessionWithSig` call for `terms`, signed by `owner` for the gateway at `gateway`
/// on `chain_id`, with the owner's EIP-2612 permit (nonce `permit_nonce` of `terms.token`)
/// letting `wallet` pull the deposit (what an owner hands the relayer).
pub fn signed_open_with_permit(
    owner: &Key,
    chain_id: u64,
    gateway: Address,
    wallet: Address,
    terms: &OpenSession,
    permit_nonce: U256,
) -> ISessionGateway::openSessionWithSigCall {
    let owner_sig = owner
        .sign_hash_rsv(&terms.eip712_signing_hash(&SESSION_GATEWAY_DOMAIN.at(chain_id, gateway)));
    let permit = Permit {
        owner: terms.owner,
        spender: wallet,
        value: terms.deposit,
        nonce: permit_nonce,
        deadline: terms.deadline,
    };
    let permit_sig = owner
        .sign_hash_rsv(&permit.eip712_signing_hash(&TEST_TOKEN_DOMAIN.at(chain_id, terms.token)));
    ISessionGateway::openSessionWithSigCall {
        owner: terms.owner,
        sessionKey: terms.sessionKey,
        guardian: terms.guardian,
        token: terms.token,
        deposit: terms.deposit,
        perPaymentCap: terms.perPaymentCap,
        periodBudget: terms.periodBudget,
        periodSeconds: terms.periodSeconds,
        coSignThreshold: terms.coSignThreshold,
        validAfter: terms.validAfter,
        expiresAt: terms.expiresAt,
        leaseSeconds: terms.leaseSeconds,
        leaseKeeper: terms.leaseKeeper,
        allowlistId: terms.allowlistId,
        metadata: terms.metadata,
        nonce: terms.nonce,
        deadline: terms.deadline,
        ownerSignature: owner_sig.into(),
        permitSignature: permit_sig.into(),
    }
}
