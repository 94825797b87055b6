//! What the indexer reads from the chain and how a log becomes a row: the `eth_getLogs` it
//! asks, ranged reads that shrink to what the node takes, decoding, and which session a row
//! belongs to. The follower and [`crate::audit::verify`] share these, so an export is checked
//! against exactly the timeline the indexer would build.

use alloy_primitives::{Address, B256};
use alloy_sol_types::SolEvent;
use bursar_bindings::token::ITestToken::{Approval, Transfer};
use bursar_client::rpc::{LogBlocks, RpcError, RpcLog};
use bursar_client::Client;

use crate::decode::decode;
use crate::store::LogRow;
use crate::Contracts;

/// The logs of `blocks` the indexer follows: the Bursar contracts' own, and every token's
/// `Transfer` and `Approval` to, from or for one of them (whatever the token: deposits,
/// payments and refunds move tokens sessions use) — three `eth_getLogs` at once, in chain
/// order.
pub async fn query(
    client: &Client,
    addresses: &[Address],
    blocks: LogBlocks,
) -> Result<Vec<RpcLog>, RpcError> {
    let (transfer, approval) = (Transfer::SIGNATURE_HASH, Approval::SIGNATURE_HASH);
    let ours: Vec<B256> = addresses.iter().map(|a| a.into_word()).collect();
    let into_ours = [vec![transfer, approval], vec![], ours.clone()];
    let out_of_ours = [vec![transfer], ours];
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

/// The logs `read` answers over `from..=to`, in as many requests as the node's range limits
/// take; with the range the node asked for when it refused one. `refused` hears of each
/// refusal (the range asked next, and the node's error).
pub async fn in_ranges<F, Fut>(
    (from, to): (u64, u64),
    read: F,
    mut refused: impl FnMut(u64, &RpcError),
) -> Result<(Vec<RpcLog>, Option<u64>), RpcError>
where
    F: Fn(LogBlocks) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<RpcLog>, RpcError>>,
{
    let (mut logs, mut asked_for) = (Vec::new(), None);
    let (mut at, mut size) = (from, to.saturating_sub(from) + 1);
    while at <= to {
        let end = at.saturating_add(size - 1).min(to);
        match read(LogBlocks::Range(at, end)).await {
            Ok(some) => {
                logs.extend(some);
                at = end + 1;
            }
            Err(e) if end > at && is_range_error(&e) => {
                let asked = end - at + 1;
                size = suggested_range(&e)
                    .filter(|r| *r < asked)
                    .unwrap_or(asked / 2)
                    .max(1);
                asked_for = Some(size);
                refused(size, &e);
            }
            Err(e) => return Err(e),
        }
    }
    Ok((logs, asked_for))
}

/// `log` as a row of a block of time `block_timestamp`: named after the contract of
/// `contracts` that emitted it (`Token` for the others, which [`query`] asks only for
/// transfers and approvals), decoded, with the session it names.
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
        block_hash: log.block_hash.to_string(),
        block_timestamp,
        tx_hash: log.transaction_hash.to_string(),
        log_index: log.log_index.to(),
        address: format!("{:#x}", log.address),
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
const LINKS: [(&str, &str, &str); 2] = [
    ("ReceiptAcknowledged", "ReceiptRecorded", "receiptId"),
    ("ProvenanceRevoked", "ProvenanceRecorded", "recordId"),
];

/// Gives the rows of a batch (whole blocks, in chain order) that name no session theirs: a
/// token movement the session of the Bursar event it came with, and receipt acknowledgements
/// and provenance revocations the session of the receipt or record they name when it is in
/// the batch. Answers the links to earlier batches, for the caller to resolve.
pub fn attribute(rows: &mut [LogRow]) -> Vec<Link> {
    for i in 0..rows.len() {
        if rows[i].contract == "Token" {
            rows[i].session_id = token_session(rows, i);
        }
    }
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
    outside
}

/// Argument `name` of a decoded row, as a string.
fn arg(r: &LogRow, name: &str) -> Option<String> {
    r.args
        .as_ref()
        .and_then(|a| a.get(name))
        .and_then(|v| v.as_str())
        .map(str::to_owned)
}

/// The session of token movement `rows[i]`: of the Bursar events of its transaction that name
/// one, the one moving the same amount (a payment, a deposit, a top-up, a refund), or the only
/// session there.
fn token_session(rows: &[LogRow], i: usize) -> Option<String> {
    let movement = &rows[i];
    let value = arg(movement, "value");
    let same_tx: Vec<&LogRow> = rows
        .iter()
        .filter(|r| {
            r.tx_hash == movement.tx_hash && r.contract != "Token" && r.session_id.is_some()
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

/// Whether the node refused an `eth_getLogs` for its range or its answer's size.
fn is_range_error(e: &RpcError) -> bool {
    let RpcError::Node { message, .. } = e else {
        return false;
    };
    let m = message.to_lowercase();
    [
        "range",
        "limit",
        "too many",
        "more than",
        "exceed",
        "too large",
    ]
    .iter()
    .any(|w| m.contains(w))
}

/// The block range a node's error suggests, as `[0xFROM, 0xTO]` (Alchemy, Infura).
fn suggested_range(e: &RpcError) -> Option<u64> {
    let RpcError::Node { message, .. } = e else {
        return None;
    };
    let inside = message.split_once('[')?.1.split_once(']')?.0;
    let (a, b) = inside.split_once(',')?;
    let parse = |s: &str| u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok();
    let (a, b) = (parse(a)?, parse(b)?);
    (b >= a).then(|| b - a + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(message: &str) -> RpcError {
        RpcError::Node {
            method: "eth_getLogs",
            code: -32005,
            message: message.into(),
            data: None,
        }
    }

    #[test]
    fn providers_range_hints_are_read() {
        let alchemy = node(
            "Log response size exceeded. You can make eth_getLogs requests with up to a 2K \
             block range and no limit on the response size, or you can request any block range \
             with a cap of 10K logs in the response. Based on your parameters, this block range \
             should work: [0x1e8480, 0x1e8c4f]",
        );
        assert!(is_range_error(&alchemy));
        assert_eq!(suggested_range(&alchemy), Some(0x1e8c4f - 0x1e8480 + 1));
        let infura =
            node("query returned more than 10000 results. Try with this block range [0x10, 0x1F].");
        assert_eq!(suggested_range(&infura), Some(16));
        let quicknode = node("eth_getLogs is limited to a 10000 range");
        assert!(is_range_error(&quicknode));
        assert_eq!(suggested_range(&quicknode), None);
        assert!(!is_range_error(&node("execution reverted")));
        assert_eq!(suggested_range(&node("backwards [0x20, 0x10]")), None);
    }

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
}
