//! EIP-712 messages signed by owners, session keys and token holders.
//!
//! The structs give off-chain code `eip712_signing_hash`; the `*_TYPEHASH` constants give the
//! contracts the same type hashes without hashing type strings at run time (a test checks that
//! each constant equals the struct's `eip712_type_hash`).

use alloy_primitives::B256;

use crate::keccak;

alloy_sol_types::sol! {
    #![sol(all_derives)]
    /// A payment signed by a session key and submitted by anyone.
    struct PaymentIntent {
        uint256 session;
        address to;
        uint256 amount;
        bytes32 purpose;
        uint256 nonce;
        uint256 deadline;
    }

    /// An owner's authorisation to open a session on their behalf (SessionGateway's
    /// `openSessionWithSig`).
    struct OpenSession {
        address owner;
        address sessionKey;
        address guardian;
        address token;
        uint256 deposit;
        uint256 perPaymentCap;
        uint256 periodBudget;
        uint64 periodSeconds;
        uint256 coSignThreshold;
        uint64 validAfter;
        uint64 expiresAt;
        uint64 leaseSeconds;
        address leaseKeeper;
        uint256 allowlistId;
        bytes32 metadata;
        uint256 nonce;
        uint256 deadline;
    }

    /// An owner's decision on a pending payment (SessionGateway's `decidePendingWithSig`).
    struct PendingDecision {
        uint256 pendingId;
        bool approve;
        uint256 nonce;
        uint256 deadline;
    }

    /// A renewal of a session's lease (`renewLease`), signed by the session's lease keeper, or by
    /// its session key when the session has no keeper.
    struct LeaseRenewal {
        uint256 session;
        uint256 nonce;
        uint256 deadline;
    }

    /// A provenance record signed by a session key (`recordProvenance`).
    struct ProvenanceRecord {
        uint256 session;
        bytes32 subject;
        bytes32 inputs;
        bytes32 runtime;
        bytes32 policy;
        bytes32 uri;
        uint256[] parents;
        uint256 nonce;
        uint256 deadline;
    }

    /// A payer's (its session key's or owner's) or payee's feedback on the agent on the other
    /// side of a receipt (`giveReceiptFeedback`).
    struct ReceiptFeedback {
        uint256 receiptId;
        bool byPayee;
        uint256 agentId;
        int128 value;
        uint8 valueDecimals;
        string tag1;
        string tag2;
        string endpoint;
        string feedbackURI;
        uint256 deadline;
    }

    /// The giver's revocation of its feedback on a receipt (`revokeReceiptFeedback`).
    struct RevokeReceiptFeedback {
        uint256 receiptId;
        bool byPayee;
        uint256 deadline;
    }

    /// EIP-3009 `transferWithAuthorization` of a token like USDC: what an x402 `exact` payment
    /// carries. For a session, `from` is the session wallet and the session key signs it.
    struct TransferWithAuthorization {
        address from;
        address to;
        uint256 value;
        uint256 validAfter;
        uint256 validBefore;
        bytes32 nonce;
    }

    /// EIP-2612 permit of the test token.
    struct Permit {
        address owner;
        address spender;
        uint256 value;
        uint256 nonce;
        uint256 deadline;
    }
}

/// Type hash of [`PaymentIntent`]: what a session key signs to pay.
pub const PAYMENT_INTENT_TYPEHASH: B256 = keccak(
    b"PaymentIntent(uint256 session,address to,uint256 amount,bytes32 purpose,uint256 nonce,uint256 deadline)",
);
/// Type hash of [`OpenSession`]: an owner's signed terms for `openSessionWithSig`.
pub const OPEN_SESSION_TYPEHASH: B256 = keccak(
    b"OpenSession(address owner,address sessionKey,address guardian,address token,uint256 deposit,uint256 perPaymentCap,uint256 periodBudget,uint64 periodSeconds,uint256 coSignThreshold,uint64 validAfter,uint64 expiresAt,uint64 leaseSeconds,address leaseKeeper,uint256 allowlistId,bytes32 metadata,uint256 nonce,uint256 deadline)",
);
/// Type hash of [`PendingDecision`]: an owner's signed approval or rejection.
pub const PENDING_DECISION_TYPEHASH: B256 =
    keccak(b"PendingDecision(uint256 pendingId,bool approve,uint256 nonce,uint256 deadline)");
/// Type hash of [`LeaseRenewal`]: the keeper's (or session key's) signed renewal.
pub const LEASE_RENEWAL_TYPEHASH: B256 =
    keccak(b"LeaseRenewal(uint256 session,uint256 nonce,uint256 deadline)");
/// Type hash of [`ProvenanceRecord`]: a session key's signed attestation.
pub const PROVENANCE_RECORD_TYPEHASH: B256 = keccak(
    b"ProvenanceRecord(uint256 session,bytes32 subject,bytes32 inputs,bytes32 runtime,bytes32 policy,bytes32 uri,uint256[] parents,uint256 nonce,uint256 deadline)",
);
/// Type hash of [`ReceiptFeedback`]: a payer's or payee's signed feedback on a receipt.
pub const RECEIPT_FEEDBACK_TYPEHASH: B256 = keccak(
    b"ReceiptFeedback(uint256 receiptId,bool byPayee,uint256 agentId,int128 value,uint8 valueDecimals,string tag1,string tag2,string endpoint,string feedbackURI,uint256 deadline)",
);
/// Type hash of [`RevokeReceiptFeedback`]: the giver's signed revocation.
pub const REVOKE_RECEIPT_FEEDBACK_TYPEHASH: B256 =
    keccak(b"RevokeReceiptFeedback(uint256 receiptId,bool byPayee,uint256 deadline)");
/// Type hash of EIP-3009 [`TransferWithAuthorization`], as USDC implements it.
pub const TRANSFER_WITH_AUTHORIZATION_TYPEHASH: B256 = keccak(
    b"TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)",
);
/// Type hash of EIP-2612 [`Permit`], as the test token implements it.
pub const PERMIT_TYPEHASH: B256 =
    keccak(b"Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)");

/// EIP-712 domain of a Bursar contract: `name`, `version` and the hashes the contracts use.
pub struct Domain {
    /// The domain's `name`.
    pub name: &'static str,
    /// The domain's `version`.
    pub version: &'static str,
    /// `keccak256(name)`, as the domain separator hashes it.
    pub name_hash: B256,
    /// `keccak256(version)`.
    pub version_hash: B256,
}

const fn domain(name: &'static str, version: &'static str) -> Domain {
    Domain {
        name,
        version,
        name_hash: keccak(name.as_bytes()),
        version_hash: keccak(version.as_bytes()),
    }
}

/// EIP-712 domain of SessionWallet.
pub const SESSION_WALLET_DOMAIN: Domain = domain("Bursar Session Wallet", "1");
/// EIP-712 domain of SessionGateway.
pub const SESSION_GATEWAY_DOMAIN: Domain = domain("Bursar Session Gateway", "1");
/// EIP-712 domain of ReceiptRegistry.
pub const RECEIPT_REGISTRY_DOMAIN: Domain = domain("Bursar Receipt Registry", "1");
/// EIP-712 domain of the test token (EIP-2612 permits).
pub const TEST_TOKEN_DOMAIN: Domain = domain("Bursar Test USD", "1");

impl Domain {
    /// The full EIP-712 domain for this contract at `verifying_contract` on `chain_id`.
    pub fn at(
        &self,
        chain_id: u64,
        verifying_contract: alloy_primitives::Address,
    ) -> alloy_sol_types::Eip712Domain {
        alloy_sol_types::Eip712Domain::new(
            Some(alloc::borrow::Cow::Borrowed(self.name)),
            Some(alloc::borrow::Cow::Borrowed(self.version)),
            Some(alloy_primitives::U256::from(chain_id)),
            Some(verifying_contract),
            None,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_sol_types::SolStruct;

    #[test]
    fn typehash_constants_match_the_structs() {
        let cases: [(alloc::borrow::Cow<'static, str>, B256); 9] = [
            (PaymentIntent::eip712_encode_type(), PAYMENT_INTENT_TYPEHASH),
            (OpenSession::eip712_encode_type(), OPEN_SESSION_TYPEHASH),
            (
                PendingDecision::eip712_encode_type(),
                PENDING_DECISION_TYPEHASH,
            ),
            (LeaseRenewal::eip712_encode_type(), LEASE_RENEWAL_TYPEHASH),
            (
                ProvenanceRecord::eip712_encode_type(),
                PROVENANCE_RECORD_TYPEHASH,
            ),
            (Permit::eip712_encode_type(), PERMIT_TYPEHASH),
            (
                ReceiptFeedback::eip712_encode_type(),
                RECEIPT_FEEDBACK_TYPEHASH,
            ),
            (
                RevokeReceiptFeedback::eip712_encode_type(),
                REVOKE_RECEIPT_FEEDBACK_TYPEHASH,
            ),
            (
                TransferWithAuthorization::eip712_encode_type(),
                TRANSFER_WITH_AUTHORIZATION_TYPEHASH,
            ),
        ];
        for (encoded, constant) in cases {
            assert_eq!(
                alloy_primitives::keccak256(encoded.as_bytes()),
                constant,
                "{encoded}"
            );
        }
    }

    #[test]
    fn domain_hashes_match_names() {
        for d in [
            SESSION_WALLET_DOMAIN,
            RECEIPT_REGISTRY_DOMAIN,
            TEST_TOKEN_DOMAIN,
        ] {
            assert_eq!(alloy_primitives::keccak256(d.name), d.name_hash);
            assert_eq!(alloy_primitives::keccak256(d.version), d.version_hash);
        }
    }
}
