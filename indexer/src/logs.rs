//! What the indexer reads from the chain and how a log becomes a row: the `eth_getLogs` it
//! asks (read in ranges by [`bursar_client::ranges`]), decoding, and which session a row
//! belongs to. The follower and [`crate::audit::verify`] share these, so an export is checked
//! against exactly the timeline the indexer would build.

use alloy_primitives::{hex, Address, B256};
use alloy_sol_types::SolEvent;
use bursar_bindings::evm::IFiatToken::AuthorizationUsed;
use bursar_bindings::token::ITestToken::{Approval, Transfer};
use bursar_client::rpc::{LogBlocks, RpcError, RpcLog};
use bursar_client::Client;

use crate::contracts::Contracts;
use crate::decode::decode;
use crate::store::LogRow;

/// The logs of `blocks` the indexer follows: the Bursar contracts' own, every token's
/// `Transfer` and `Approval` to, from or for one of them (whatever the token: deposits,
/// payments and refunds move tokens sessions use), and EIP-3009's `AuthorizationUsed` of an
/// authorization one of them gave (a third party settling what a session wallet reserved for
/// x402) — three `eth_getLogs` at once, in chain order.
pub async fn query(
    client: &Client,
    addresses: &[Address],
    blocks: LogBlocks,
) -> Result<Vec<RpcLog>, RpcError> {
    let (transfer, approval) = (Transfer::SIGNATURE_HASH, Approval::SIGNATURE_HASH);
    let used = AuthorizationUsed::SIGNATURE_HASH;
    let ours: Vec<B256> = addresses.iter().map(|a| a.into_word()).collect();
    let into_ours = [vec![transfer, approval], vec![], ours.clone()];
    // `from` and `authorizer` are both the first indexed argument.
    let out_of_ours = [vec![transfer, used], ours];
    let (own, into, out) = futures_util::try_join!(
        client.logs_matching(addresses, &[], blocks),
        client.logs_matching(&[], &into_ours, blocks),
        client.logs_matching(&[], &out_of_ours, blocks),
    )?;
    let mut logs = own;
    logs.extend(into);
    logs.extend(out);
    logs.sort_by_key(|l| (l.block_number, l.log_index));
    // A transfer between two Bursar contracts matches both token queries.
    logs.dedup_by_key(|l| (l.block_hash, l.log_index));
    Ok(logs)
}

/// `log` as a row of a block of time `block_timestamp`: named after the contract of
/// `contracts` that emitted it (`Token` for the others, which [`query`] asks only for
/// transfers, approvals and authorizations used), decoded, with the session it names.
pub fn row(chain_id: u64, contracts: &Contracts, log: &RpcLog, block_timestamp: u64) -> LogRow {
    let contract = contracts
        .iter()
        .find(|(a, _)| *a == log.address)
        .map_or("Token", |(_, name)| name);
    let (event, args, decode_error) = match decode(&log.topics, &log.data) {
        Some(Ok(d)) => (Some(d.event.to_owned()), Some(d.args), None),
        Some(Err(e)) => (None, None, Some(e)),
        None => (None, None, Some("unknown event".to_owned())),
    };
    let session_id = args
        .as_ref()
        .and_then(|a| a.get("sessionId"))
        .and_then(|s| s.as_str())
        .map(str::to_owned);
    LogRow {
        chain_id,
        block_number: log.block_number.to(),
        // Hex through `hex::encode_prefixed` (the same lowercase text as `Display`, without
        // the formatter's character-by-character writes).
        block_hash: hex::encode_prefixed(log.block_hash),
        block_timestamp,
        tx_hash: hex::encode_prefixed(log.transaction_hash),
        log_index: log.log_index.to(),
        address: hex::encode_prefixed(log.address),
        contract: contract.to_owned(),
        topics: log.topics.clone(),
        data: log.data.clone(),
        event,
        args: args.map(serde_json::Value::Object),
        decode_error,
        session_id,
        canonical: true,
        orphaned_by: None,
    }
}

/// A row whose session is that of an earlier event outside its batch: the `origin` event whose
/// argument `field` is `id` (the follower looks it up in the store).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    /// The row's position in the batch.
    pub index: usize,
    /// The event that names the session (`ReceiptRecorded`, `ProvenanceRecorded`).
    pub origin: &'static str,
    /// The argument both events share (`receiptId`, `recordId`).
    pub field: &'static str,
    /// Its value.
    pub id: String,
}

/// Events that name no session but a record of one: (event, origin event, shared argument).
const LINKS: [(&str, &str, &str); 5] = [
    ("ReceiptAcknowledged", "ReceiptRecorded", "receiptId"),
    ("ReceiptFeedbackGiven", "ReceiptRecorded", "receiptId"),
    ("ReceiptFeedbackRevoked", "ReceiptRecorded", "receiptId"),
    ("ProvenanceRevoked", "ProvenanceRecorded", "recordId"),
    // The token's, when a third party settles an authorization a session reserved.
    ("AuthorizationUsed", "PaymentReserved", "nonce"),
];

/// Gives the rows of a batch (whole blocks, in chain order) that name no session theirs:
/// receipt acknowledgements, provenance revocations and authorizations used the session of
/// the receipt, record or reservation they name when it is in the batch, then token movements
/// ([`attribute_tokens`]). Answers the links to earlier batches, for the caller to resolve
/// (and then to attribute the token movements again).
pub fn attribute(rows: &mut [LogRow]) -> Vec<Link> {
    let mut outside = Vec::new();
    for i in 0..rows.len() {
        let Some(&(_, origin, field)) = LINKS
            .iter()
            .find(|(event, ..)| rows[i].event.as_deref() == Some(*event))
        else {
            continue;
        };
        let Some(id) = arg(&rows[i], field) else {
            continue;
        };
        let in_batch = rows[..i]
            .iter()
            .rev()
            .find(|r| r.event.as_deref() == Some(origin) && arg(r, field).as_ref() == Some(&id));
        match in_batch {
            Some(r) => rows[i].session_id = r.session_id.clone(),
            None => outside.push(Link {
                index: i,
                origin,
                field,
                id,
            }),
        }
    }
    attribute_tokens(rows);
    outside
}

/// Gives each token movement of a batch the session of the events of its transaction
/// ([`token_session`]).
pub fn attribute_tokens(rows: &mut [LogRow]) {
    for i in 0..rows.len() {
        if rows[i].contract == "Token" && rows[i].event.as_deref() != Some(USED) {
            rows[i].session_id = token_session(rows, i);
        }
    }
}

/// EIP-3009's event: the token's, but it names a session's reservation (see [`LINKS`]).
const USED: &str = "AuthorizationUsed";

/// Argument `name` of a decoded row, as a string.
fn arg(r: &LogRow, name: &str) -> Option<String> {
    r.args
        .as_ref()
        .and_then(|a| a.get(name))
        .and_then(|v| v.as_str())
        .map(str::to_owned)
}

/// The session of token movement `rows[i]`: of the Bursar events of its transaction that name
/// one (and the authorizations used of a session's reservations: a third party's settlement),
/// the one moving the same amount (a payment, a deposit, a top-up, a refund), or the only
/// session there.
fn token_session(rows: &[LogRow], i: usize) -> Option<String> {
    let movement = &rows[i];
    let value = arg(movement, "value");
    let same_tx: Vec<&LogRow> = rows
        .iter()
        .filter(|r| {
            r.tx_hash == movement.tx_hash
                && (r.contract != "Token" || r.event.as_deref() == Some(USED))
                && r.session_id.is_some()
        })
        .collect();
    let same_amount = same_tx.iter().find(|r| {
        ["amount", "deposit", "refund"]
            .iter()
            .any(|f| value.is_some() && arg(r, f) == value)
    });
    match same_amount {
        Some(r) => r.session_id.clone(),
        None => {
            let first = same_tx.first()?.session_id.clone();
            same_tx
                .iter()
                .all(|r| r.session_id == first)
                .then_some(first)
                .flatten()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decoded(tx: &str, contract: &str, event: &str, args: serde_json::Value) -> LogRow {
        LogRow {
            chain_id: 1,
            block_number: 1,
            block_hash: String::new(),
            block_timestamp: 0,
            tx_hash: tx.into(),
            log_index: 0,
            address: String::new(),
            contract: contract.into(),
            topics: vec![],
            data: Default::default(),
            event: Some(event.into()),
            session_id: args["sessionId"].as_str().map(str::to_owned),
            args: Some(args),
            decode_error: None,
            canonical: true,
            orphaned_by: None,
        }
    }

    #[test]
    fn attribution_follows_amounts_and_records() {
        let mut rows = vec![
            decoded(
                "a",
                "SessionWallet",
                "PaymentExecuted",
                json!({"sessionId": "7", "amount": "5"}),
            ),
            decoded(
                "a",
                "SessionWallet",
                "SessionToppedUp",
                json!({"sessionId": "8", "amount": "9"}),
            ),
            decoded("a", "Token", "Transfer", json!({"value": "9"})),
            decoded(
                "a",
                "ReceiptRegistry",
                "ReceiptRecorded",
                json!({"sessionId": "7", "receiptId": "3"}),
            ),
            decoded(
                "b",
                "ReceiptRegistry",
                "ReceiptAcknowledged",
                json!({"receiptId": "3"}),
            ),
            decoded(
                "b",
                "ReceiptRegistry",
                "ProvenanceRevoked",
                json!({"recordId": "4"}),
            ),
            decoded("c", "Token", "Transfer", json!({"value": "1"})),
        ];
        let outside = attribute(&mut rows);
        let sessions: Vec<_> = rows.iter().map(|r| r.session_id.as_deref()).collect();
        assert_eq!(
            sessions,
            [
                Some("7"),
                Some("8"),
                Some("8"),
                Some("7"),
                Some("7"),
                None,
                None
            ]
        );
        assert_eq!(
            outside,
            [Link {
                index: 5,
                origin: "ProvenanceRecorded",
                field: "recordId",
                id: "4".into()
            }]
        );
    }

    #[test]
    fn a_third_partys_settlement_belongs_to_the_reserving_session() {
        let mut rows = vec![
            decoded(
                "r",
                "SessionWallet",
                "PaymentReserved",
                json!({"sessionId": "7", "nonce": "0xaa", "amount": "5"}),
            ),
            decoded("s", "Token", "AuthorizationUsed", json!({"nonce": "0xaa"})),
            decoded("s", "Token", "Transfer", json!({"value": "5"})),
            // Of a reservation in an earlier batch.
            decoded("t", "Token", "AuthorizationUsed", json!({"nonce": "0xbb"})),
            decoded("t", "Token", "Transfer", json!({"value": "2"})),
        ];
        let outside = attribute(&mut rows);
        let sessions: Vec<_> = rows.iter().map(|r| r.session_id.as_deref()).collect();
        assert_eq!(sessions, [Some("7"), Some("7"), Some("7"), None, None]);
        assert_eq!(
            outside,
            [Link {
                index: 3,
                origin: "PaymentReserved",
                field: "nonce",
                id: "0xbb".into()
            }]
        );
        // The follower finds it in the store, then the transfer follows.
        rows[3].session_id = Some("8".into());
        attribute_tokens(&mut rows);
        assert_eq!(rows[4].session_id.as_deref(), Some("8"));
        assert_eq!(rows[3].session_id.as_deref(), Some("8"), "kept");
    }
}
