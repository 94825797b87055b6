//! What owners and agents sign, as the calls that carry it: an agent's payment intent (EIP-712,
//! the session wallet's domain) and an owner's `OpenSession` with the EIP-2612 permit that lets
//! the wallet pull the deposit (the gateway's and the token's domains); and the same messages
//! as `eth_signTypedData_v4` JSON, for an owner's own wallet to sign.

use alloy_primitives::{Address, U256};
use alloy_sol_types::SolStruct;
use bursar_bindings::eip712::{
    OpenSession, PaymentIntent, PendingDecision, Permit, SESSION_GATEWAY_DOMAIN,
    SESSION_WALLET_DOMAIN, TEST_TOKEN_DOMAIN,
};
use bursar_bindings::gateway::ISessionGateway;
use bursar_bindings::wallet::ISessionWallet;

use serde_json::{json, Value};

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
    terms.with_sig_call(owner_sig.into(), permit_sig.into())
}

/// `terms` as `eth_signTypedData_v4` takes it (`types`, `primaryType`, `domain`, `message`):
/// what an owner's wallet (MetaMask, a hardware wallet, any EIP-712 signer) is handed to sign
/// an `OpenSession` for the gateway at `gateway` on `chain_id`.
pub fn open_session_typed_data(terms: &OpenSession, chain_id: u64, gateway: Address) -> Value {
    let message = json!({
        "owner": terms.owner,
        "sessionKey": terms.sessionKey,
        "guardian": terms.guardian,
        "token": terms.token,
        "deposit": terms.deposit.to_string(),
        "perPaymentCap": terms.perPaymentCap.to_string(),
        "periodBudget": terms.periodBudget.to_string(),
        "periodSeconds": terms.periodSeconds.to_string(),
        "coSignThreshold": terms.coSignThreshold.to_string(),
        "validAfter": terms.validAfter.to_string(),
        "expiresAt": terms.expiresAt.to_string(),
        "leaseSeconds": terms.leaseSeconds.to_string(),
        "leaseKeeper": terms.leaseKeeper,
        "allowlistId": terms.allowlistId.to_string(),
        "metadata": terms.metadata,
        "nonce": terms.nonce.to_string(),
        "deadline": terms.deadline.to_string(),
    });
    typed_data::<OpenSession>(&SESSION_GATEWAY_DOMAIN.at(chain_id, gateway), message)
}

/// `decision` as `eth_signTypedData_v4` takes it: what an owner signs to approve or reject a
/// pending payment through the gateway at `gateway` on `chain_id`.
pub fn pending_decision_typed_data(
    decision: &PendingDecision,
    chain_id: u64,
    gateway: Address,
) -> Value {
    let message = json!({
        "pendingId": decision.pendingId.to_string(),
        "approve": decision.approve,
        "nonce": decision.nonce.to_string(),
        "deadline": decision.deadline.to_string(),
    });
    typed_data::<PendingDecision>(&SESSION_GATEWAY_DOMAIN.at(chain_id, gateway), message)
}

/// `permit` as `eth_signTypedData_v4` takes it, in the token's EIP-712 `domain` (for the test
/// token, `TEST_TOKEN_DOMAIN.at(chain_id, token)`).
pub fn permit_typed_data(permit: &Permit, domain: &alloy_sol_types::Eip712Domain) -> Value {
    let message = json!({
        "owner": permit.owner,
        "spender": permit.spender,
        "value": permit.value.to_string(),
        "nonce": permit.nonce.to_string(),
        "deadline": permit.deadline.to_string(),
    });
    typed_data::<Permit>(domain, message)
}

/// The `eth_signTypedData_v4` object for a struct of type `S` with `message` as its values.
/// Its `types` are `S`'s and the domain's own EIP-712 types, as alloy's resolver reads them
/// from the bindings, so they cannot drift from what the contracts hash.
fn typed_data<S: SolStruct>(domain: &alloy_sol_types::Eip712Domain, message: Value) -> Value {
    let mut types = alloy_dyn_abi::Resolver::from_struct::<S>();
    types
        .ingest_string(domain.encode_type())
        .expect("a domain's type string parses");
    json!({
        "types": types,
        "primaryType": S::NAME,
        // The chain id as a decimal string, as wallets' examples write it (alloy's own
        // serialization would write it in hex).
        "domain": {
            "name": domain.name.as_deref(),
            "version": domain.version.as_deref(),
            "chainId": domain.chain_id.map(|c| c.to_string()),
            "verifyingContract": domain.verifying_contract,
        },
        "message": message,
    })
}

#[cfg(test)]
mod tests {
    use alloy_primitives::{address, keccak256};

    use super::*;

    /// What a wallet would sign, per an independent reading of the JSON.
    fn digest_of(json: &Value) -> alloy_primitives::B256 {
        let typed: alloy_dyn_abi::TypedData = serde_json::from_value(json.clone()).unwrap();
        typed.eip712_signing_hash().unwrap()
    }

    #[test]
    fn typed_data_json_hashes_to_what_the_contracts_verify() {
        let gateway = address!("1A337C6d48bc0d19F913d16074D362d065564F86");
        let token = address!("ab8e440727A38bBB180f7032ca4a8009E7b52B80");
        let terms = OpenSession {
            owner: Address::repeat_byte(1),
            sessionKey: Address::repeat_byte(2),
            guardian: Address::ZERO,
            token,
            deposit: U256::from(100_000_000u64),
            perPaymentCap: U256::from(30_000_000u64),
            periodBudget: U256::from(40_000_000u64),
            periodSeconds: 3_600,
            coSignThreshold: U256::MAX >> 128,
            validAfter: 0,
            expiresAt: 1_900_000_000,
            leaseSeconds: 600,
            leaseKeeper: Address::repeat_byte(3),
            allowlistId: U256::from(7),
            metadata: keccak256("m"),
            nonce: U256::MAX,
            deadline: U256::from(1_800_000_000u64),
        };
        let json = open_session_typed_data(&terms, 412_346, gateway);
        assert_eq!(json["primaryType"], "OpenSession");
        assert_eq!(json["types"]["OpenSession"].as_array().unwrap().len(), 17);
        assert_eq!(
            json["types"]["EIP712Domain"],
            json!([
                { "name": "name", "type": "string" },
                { "name": "version", "type": "string" },
                { "name": "chainId", "type": "uint256" },
                { "name": "verifyingContract", "type": "address" },
            ])
        );
        assert_eq!(json["types"].as_object().unwrap().len(), 2, "{json}");
        let domain = SESSION_GATEWAY_DOMAIN.at(412_346, gateway);
        assert_eq!(digest_of(&json), terms.eip712_signing_hash(&domain));

        let permit = Permit {
            owner: terms.owner,
            spender: Address::repeat_byte(9),
            value: terms.deposit,
            nonce: U256::from(3),
            deadline: terms.deadline,
        };
        let domain = TEST_TOKEN_DOMAIN.at(412_346, token);
        let json = permit_typed_data(&permit, &domain);
        assert_eq!(digest_of(&json), permit.eip712_signing_hash(&domain));

        let decision = PendingDecision {
            pendingId: U256::from(12),
            approve: true,
            nonce: U256::MAX >> 1,
            deadline: U256::from(1_800_000_000u64),
        };
        let json = pending_decision_typed_data(&decision, 412_346, gateway);
        let domain = SESSION_GATEWAY_DOMAIN.at(412_346, gateway);
        assert_eq!(digest_of(&json), decision.eip712_signing_hash(&domain));
    }
}
