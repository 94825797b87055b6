//! Bursar's events, decoded through the bindings (the one ABI definition) into the event's
//! name and its arguments as JSON: camelCase names as in the Solidity interface, amounts and
//! ids as decimal strings (but `sessionId` as `0x` + 64 hex digits, as every Bursar API writes
//! it: see [`bursar_client::ids`]), addresses EIP-55, hashes hex, times (`uint64`) as numbers.

use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::SolEvent;
use bursar_bindings::counterparty::ICounterpartyRegistry as Lists;
use bursar_bindings::erc8004::{IIdentityRegistry as Agents, IReputationRegistry as Feedback};
use bursar_bindings::evm::IFiatToken as Fiat;
use bursar_bindings::gateway::ISessionGateway as Gateway;
use bursar_bindings::receipts::IReceiptRegistry as Receipts;
use bursar_bindings::token::ITestToken as Token;
use bursar_bindings::wallet::ISessionWallet as Wallet;
use bursar_client::ids::canonical_session_id;
use serde_json::{Map, Value};

/// A decoded event.
#[derive(Clone, Debug, PartialEq)]
pub struct Decoded {
    /// The event's name (`PaymentExecuted`).
    pub event: &'static str,
    /// Its arguments.
    pub args: Map<String, Value>,
}

impl Decoded {
    /// The session the event concerns, when it names one.
    pub fn session_id(&self) -> Option<&str> {
        self.args.get("sessionId").and_then(Value::as_str)
    }
}

/// An argument as JSON.
trait Json {
    fn json(&self) -> Value;
}

impl Json for U256 {
    fn json(&self) -> Value {
        Value::String(self.to_string())
    }
}

impl Json for Address {
    fn json(&self) -> Value {
        Value::String(self.to_checksum(None))
    }
}

impl Json for B256 {
    fn json(&self) -> Value {
        Value::String(alloy_primitives::hex::encode_prefixed(self))
    }
}

impl Json for bool {
    fn json(&self) -> Value {
        Value::Bool(*self)
    }
}

impl Json for u64 {
    fn json(&self) -> Value {
        Value::from(*self)
    }
}

impl Json for alloy_primitives::Bytes {
    fn json(&self) -> Value {
        Value::String(alloy_primitives::hex::encode_prefixed(self))
    }
}

impl Json for String {
    fn json(&self) -> Value {
        Value::String(self.clone())
    }
}

/// ERC-8004 feedback values: decimal text, as every amount.
impl Json for i128 {
    fn json(&self) -> Value {
        Value::String(self.to_string())
    }
}

impl Json for u8 {
    fn json(&self) -> Value {
        Value::from(*self)
    }
}

impl Json for Vec<U256> {
    fn json(&self) -> Value {
        Value::Array(self.iter().map(Json::json).collect())
    }
}

/// Writes the `sessionId` argument, if any, in the one session id form.
fn hex_session_id(args: &mut Map<String, Value>) {
    if let Some(Value::String(id)) = args.get_mut("sessionId") {
        if let Some(hex) = canonical_session_id(id) {
            *id = hex;
        }
    }
}

/// `decode(topics, data)`: the first event of the list whose signature hash is `topics[0]`,
/// decoded; `None` when none is; `Some(Err)` when its data does not decode.
macro_rules! events {
    ($( $ty:path { $($field:ident),* $(,)? } ),* $(,)?) => {
        /// Decodes a log of a Bursar contract (see [`decode`]).
        fn decode_event(topics: &[B256], data: &[u8]) -> Option<Result<Decoded, String>> {
            let topic0 = topics.first()?;
            $(
                if *topic0 == <$ty as SolEvent>::SIGNATURE_HASH {
                    let decoded = <$ty as SolEvent>::decode_raw_log(topics.iter().copied(), data)
                        .map_err(|e| e.to_string());
                    return Some(decoded.map(|e| {
                        let mut args = Map::new();
                        $( args.insert(stringify!($field).into(), e.$field.json()); )*
                        hex_session_id(&mut args);
                        let signature = <$ty as SolEvent>::SIGNATURE;
                        Decoded {
                            event: signature.split('(').next().unwrap_or(signature),
                            args,
                        }
                    }));
                }
            )*
            None
        }
    };
}

/// Decodes a log of a Bursar contract: the first event of the list whose signature hash is
/// `topics[0]`; `None` when none is; `Some(Err)` when its data does not decode. A batch's
/// refused intent (`PaymentFailed`) also gets its `reason` decoded, as `error` (the custom
/// error's name) and `errorArgs`, as the relayer's API reports it.
pub fn decode(topics: &[B256], data: &[u8]) -> Option<Result<Decoded, String>> {
    // ERC-721's `Transfer` and `Approval` (the Identity Registry's agents) share ERC-20's
    // signatures; their ids are a fourth topic.
    if topics.len() == 4 {
        if let Some(nft) = decode_nft(topics, data) {
            return Some(nft);
        }
    }
    let mut decoded = decode_event(topics, data)?;
    if let Ok(d) = &mut decoded {
        if d.event == "PaymentFailed" {
            let reason = d
                .args
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let bytes = alloy_primitives::hex::decode(reason).unwrap_or_default();
            if let Some(e) = bursar_client::revert::decode_error(&bytes) {
                d.args.insert("error".into(), Value::String(e.name));
                d.args.insert("errorArgs".into(), Value::Object(e.args));
            }
        }
    }
    Some(decoded)
}

/// An ERC-721 `Transfer` or `Approval` (four topics), named as ERC-20's are.
fn decode_nft(topics: &[B256], data: &[u8]) -> Option<Result<Decoded, String>> {
    let id = U256::from_be_bytes(topics[3].0).json();
    let address = |t: &B256| Address::from_word(*t).json();
    let (event, names) = if topics[0] == <Agents::Transfer as SolEvent>::SIGNATURE_HASH {
        ("Transfer", ["from", "to"])
    } else if topics[0] == <Agents::Approval as SolEvent>::SIGNATURE_HASH {
        ("Approval", ["owner", "approved"])
    } else {
        return None;
    };
    if !data.is_empty() {
        return Some(Err(format!("an ERC-721 {event} has no data")));
    }
    let mut args = Map::new();
    args.insert(names[0].into(), address(&topics[1]));
    args.insert(names[1].into(), address(&topics[2]));
    args.insert("tokenId".into(), id);
    Some(Ok(Decoded { event, args }))
}

events! {
    Wallet::SessionOpened {
        sessionId, owner, sessionKey, guardian, token, deposit, perPaymentCap, periodBudget,
        periodSeconds, coSignThreshold, validAfter, expiresAt, leaseSeconds, leaseKeeper,
        allowlistId, metadata,
    },
    Wallet::SessionToppedUp { sessionId, from, amount, deposit },
    Wallet::PaymentExecuted { sessionId, to, receiptId, amount, purpose, nonce },
    Wallet::PaymentPending { sessionId, to, pendingId, amount, purpose, nonce, expiresAt },
    Wallet::PaymentFailed { sessionId, nonce, reason },
    Wallet::PaymentApproved { sessionId, pendingId, by },
    Wallet::PaymentRejected { sessionId, pendingId, by },
    Wallet::SessionRevoked { sessionId, by },
    Wallet::SessionClosed { sessionId, by, spent, refund },
    Wallet::LeaseRenewed { sessionId, leaseExpiresAt },
    Wallet::RefundDeferred { sessionId, owner, token, amount },
    Wallet::RefundClaimed { owner, token, to, amount },
    Wallet::PaymentReserved { sessionId, to, receiptId, amount, purpose, nonce, digest, validBefore },
    Wallet::ReservationReleased { sessionId, to, receiptId, digest, amount },
    Wallet::DepositConfirmed { sessionId, channelId, amount, deposited },
    Wallet::ChannelCredited { sessionId, channelId, amount, credited },
    Gateway::GatewayBound { wallet },
    Lists::ListCreated { listId, owner },
    Lists::ListOwnershipTransferred { listId, previousOwner, newOwner },
    Lists::ListAdminSet { listId, admin, enabled },
    Lists::EntrySet { listId, counterparty, by, allowed, maxPerPayment, label },
    Lists::EntryRemoved { listId, counterparty, by },
    // The receipt registry's `WalletBound` has the same signature: decoded alike.
    Lists::WalletBound { wallet },
    Receipts::ReceiptRecorded { receiptId, sessionId, payee, payer, token, amount, purpose, timestamp },
    Receipts::ReceiptAcknowledged { receiptId, payee, responseHash },
    Receipts::ReceiptReleased { receiptId },
    Receipts::ProvenanceRecorded {
        recordId, sessionId, attester, subject, inputs, runtime, policy, uri, parents,
    },
    Receipts::ProvenanceRevoked { recordId, by, reason },
    Receipts::ReceiptFeedbackGiven { receiptId, agentId, byPayee, giver, feedbackIndex },
    Receipts::ReceiptFeedbackRevoked { receiptId, agentId, byPayee, feedbackIndex },
    // ERC-8004: agents' identities (their ERC-721 `Transfer`s above) and feedback.
    Agents::Registered { agentId, agentURI, owner },
    Agents::URIUpdated { agentId, newURI, updatedBy },
    Agents::MetadataSet { agentId, indexedMetadataKey, metadataKey, metadataValue },
    Agents::ApprovalForAll { owner, operator, approved },
    Agents::MetadataUpdate { _tokenId },
    Feedback::NewFeedback {
        agentId, clientAddress, feedbackIndex, value, valueDecimals, indexedTag1, tag1, tag2,
        endpoint, feedbackURI, feedbackHash,
    },
    Feedback::FeedbackRevoked { agentId, clientAddress, feedbackIndex },
    Feedback::ResponseAppended {
        agentId, clientAddress, feedbackIndex, responder, responseURI, responseHash,
    },
    // Any ERC-20's, to, from or for a Bursar contract (the follower asks for no others).
    Token::Transfer { from, to, value },
    Token::Approval { owner, spender, value },
    // EIP-3009's, of an authorization a Bursar contract gave (a session's x402 reservation).
    Fiat::AuthorizationUsed { authorizer, nonce },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_intent_names_its_error() {
        use alloy_sol_types::SolError;
        let reason = Wallet::WalletPeriodBudgetExceeded {
            amount: U256::from(20),
            available: U256::from(17),
        };
        let e = Wallet::PaymentFailed {
            sessionId: U256::from(7),
            nonce: U256::from(9),
            reason: reason.abi_encode().into(),
        };
        let log = e.encode_log_data();
        let d = decode(log.topics(), &log.data).unwrap().unwrap();
        assert_eq!(d.event, "PaymentFailed");
        assert_eq!(d.args["nonce"], "9");
        assert_eq!(d.args["error"], "WalletPeriodBudgetExceeded");
        assert_eq!(d.args["errorArgs"]["available"], "17");
        assert!(d.args["reason"].as_str().unwrap().starts_with("0x"));
    }

    #[test]
    fn a_payment_decodes_with_its_session() {
        let e = Wallet::PaymentExecuted {
            sessionId: U256::from(7),
            to: Address::repeat_byte(0xa1),
            receiptId: U256::from(3),
            amount: U256::from(1_000_000u64),
            purpose: B256::repeat_byte(1),
            nonce: U256::from(9),
        };
        let log = e.encode_log_data();
        let d = decode(log.topics(), &log.data).unwrap().unwrap();
        assert_eq!(d.event, "PaymentExecuted");
        let seven = format!("0x{}7", "0".repeat(63));
        assert_eq!(d.session_id(), Some(seven.as_str()));
        assert_eq!(d.args["receiptId"], "3", "other ids stay decimal");
        assert_eq!(d.args["amount"], "1000000");
        assert_eq!(
            d.args["to"],
            Address::repeat_byte(0xa1).to_checksum(None).as_str()
        );
    }

    #[test]
    fn unknown_and_malformed_logs() {
        assert_eq!(decode(&[], &[]), None);
        assert_eq!(decode(&[B256::repeat_byte(9)], &[]), None);
        let truncated = decode(&[Wallet::SessionClosed::SIGNATURE_HASH], &[1, 2, 3]);
        assert!(matches!(truncated, Some(Err(_))), "{truncated:?}");
    }
}
