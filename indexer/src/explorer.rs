//! What the audit explorer's pages show (`/ui/sessions`, `/ui/sessions/{id}`), read from the
//! store as the API reads it: a session's story as of a block — its state by the wallet's
//! rules, every event (orphaned ones kept as evidence), its spending over time and by
//! counterparty, its receipts and its provenance records with their lineage.

use std::collections::{BTreeMap, BTreeSet};

use alloy_primitives::{keccak256, Address, U256};
use serde_json::Value;

use crate::metrics::Metrics;
use crate::projections::{Session, SessionView};
use crate::records::Records;
use crate::store::{LogFilter, LogRow, Store, StoreError};

/// How many sessions a search shows.
pub const SEARCH_LIMIT: u64 = 100;

/// What a search asks for, read from the text typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Query {
    /// Everything (the first sessions opened).
    All,
    /// A session id.
    Session(String),
    /// An owner, a session key or a counterparty paid.
    Address(String),
    /// A session's metadata: a hash, or the text a host hashed into it (the relayer hashes a
    /// sandbox's text with keccak-256).
    Metadata(String),
}

impl Query {
    /// Reads `text`: a session id (0x and 64 hex digits, or decimal), an address, else the
    /// metadata's hash or its text.
    pub fn parse(text: &str) -> Query {
        let text = text.trim();
        if text.is_empty() {
            return Query::All;
        }
        if let Ok(address) = text.parse::<Address>() {
            return Query::Address(address.to_checksum(None));
        }
        if let Some(id) = bursar_client::ids::canonical_session_id(text) {
            return Query::Session(id);
        }
        Query::Metadata(keccak256(text.as_bytes()).to_string())
    }
}

/// The `SessionOpened` rows `query` finds (at most [`SEARCH_LIMIT`]), up to block `at`. A
/// 64-digit hex text may be a session id or a metadata hash: both are looked for.
pub async fn search(store: &Store, query: &Query, at: u64) -> Result<Vec<LogRow>, StoreError> {
    let opened = |args: Vec<(String, String)>| LogFilter {
        event: Some("SessionOpened".into()),
        args,
        to_block: Some(at),
        limit: SEARCH_LIMIT,
        ..LogFilter::default()
    };
    let mut found = Vec::new();
    match query {
        Query::All => found = store.logs(&opened(vec![])).await?,
        Query::Session(id) => {
            let mut by_id = opened(vec![]);
            by_id.session_id = Some(id.clone());
            found.extend(store.logs(&by_id).await?);
            let metadata = vec![("metadata".to_owned(), id.clone())];
            found.extend(store.logs(&opened(metadata)).await?);
        }
        Query::Metadata(hash) => {
            let metadata = vec![("metadata".to_owned(), hash.clone())];
            found = store.logs(&opened(metadata)).await?;
        }
        Query::Address(a) => {
            for field in ["owner", "sessionKey"] {
                let args = vec![(field.to_owned(), a.clone())];
                found.extend(store.logs(&opened(args)).await?);
            }
            // Sessions that paid it.
            let paid = LogFilter {
                event: Some("PaymentExecuted".into()),
                args: vec![("to".into(), a.clone())],
                to_block: Some(at),
                limit: 10_000,
                ..LogFilter::default()
            };
            let sessions: BTreeSet<String> = store
                .logs(&paid)
                .await?
                .into_iter()
                .filter_map(|r| r.session_id)
                .collect();
            for id in sessions.into_iter().take(SEARCH_LIMIT as usize) {
                let mut by_id = opened(vec![]);
                by_id.session_id = Some(id);
                found.extend(store.logs(&by_id).await?);
            }
        }
    }
    let mut seen = BTreeSet::new();
    found.retain(|r| seen.insert((r.block_number, r.log_index)));
    found.sort_by_key(|r| (r.block_number, r.log_index));
    found.truncate(SEARCH_LIMIT as usize);
    Ok(found)
}

/// A payment, and the session's spending once it was made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spent {
    /// Its block's time.
    pub time: u64,
    /// The payee.
    pub to: String,
    /// This payment.
    pub amount: U256,
    /// Spent in its budget period, it included.
    pub period_spent: U256,
    /// Spent in all, it included.
    pub spent: U256,
}

/// A provenance record in a session's lineage graph.
#[derive(Clone, Debug)]
pub struct Node {
    /// Its id (decimal).
    pub id: String,
    /// The record as the API shows it (`valid`, `parents`, `uri`, `recorded`…).
    pub record: Value,
    /// Whether it belongs to this session (its ancestors and descendants may not).
    pub own: bool,
}

/// A session's story as of a block.
pub struct Story {
    /// Its state by the wallet's rules.
    pub state: SessionView,
    /// The token's address.
    pub token: Option<Address>,
    /// Every event of the session in chain order, orphaned ones included.
    pub events: Vec<LogRow>,
    /// Its payments in order, with the spending they left.
    pub spending: Vec<Spent>,
    /// Paid per counterparty, most first.
    pub by_counterparty: Vec<(String, U256)>,
    /// Its receipts with their acknowledgements.
    pub receipts: Vec<Value>,
    /// Its provenance records and their ancestors and descendants, in the order found.
    pub nodes: Vec<Node>,
    /// Parent → child edges between `nodes` (ids).
    pub edges: Vec<(String, String)>,
    /// Whether every record of the session and all its ancestors are unrevoked.
    pub lineage_valid: bool,
}

/// Session `id`'s story up to block `at` (its state judged at `time`); `None` when it was not
/// opened by then.
pub async fn story(
    store: &Store,
    metrics: &Metrics,
    id: &str,
    at: u64,
    time: u64,
) -> Result<Option<Story>, StoreError> {
    let events = store
        .logs(&LogFilter {
            session_id: Some(id.to_owned()),
            to_block: Some(at),
            include_orphaned: true,
            limit: u64::MAX,
            ..LogFilter::default()
        })
        .await?;
    let mut spending = Vec::new();
    let Some(session) = Session::fold_with(&events, |e, s| {
        if let (Some("PaymentExecuted" | "PaymentReserved"), Some(args)) =
            (e.event.as_deref(), e.args.as_ref())
        {
            spending.push(Spent {
                time: e.block_timestamp,
                to: args["to"].as_str().unwrap_or_default().to_owned(),
                amount: args["amount"]
                    .as_str()
                    .and_then(|a| a.parse().ok())
                    .unwrap_or_default(),
                period_spent: s.period_spent,
                spent: s.spent,
            });
        }
    }) else {
        return Ok(None);
    };
    let mut by_counterparty: BTreeMap<String, U256> = BTreeMap::new();
    for s in &spending {
        let total = by_counterparty.entry(s.to.clone()).or_default();
        *total = total.saturating_add(s.amount);
    }
    let mut by_counterparty: Vec<(String, U256)> = by_counterparty.into_iter().collect();
    by_counterparty.sort_by_key(|(_, paid)| std::cmp::Reverse(*paid));
    let reader = Records { store, metrics, at };
    let canonical = |name: &'static str| {
        events
            .iter()
            .filter(move |e| e.canonical && e.event.as_deref() == Some(name))
    };
    let mut receipts = Vec::new();
    for r in canonical("ReceiptRecorded") {
        receipts.push(reader.receipt(r).await?);
    }
    let (nodes, edges, lineage_valid) = lineage(&reader, canonical("ProvenanceRecorded")).await?;
    let token = session.terms["token"].as_str().and_then(|t| t.parse().ok());
    Ok(Some(Story {
        state: session.to_view(time),
        token,
        events,
        spending,
        by_counterparty,
        receipts,
        nodes,
        edges,
        lineage_valid,
    }))
}

/// The graph of `recorded` (a session's `ProvenanceRecorded` rows) with their ancestors and
/// descendants, and whether all of the session's records' lineages are valid.
async fn lineage<'a>(
    reader: &Records<'_>,
    recorded: impl Iterator<Item = &'a LogRow>,
) -> Result<(Vec<Node>, Vec<(String, String)>, bool), StoreError> {
    let mut nodes: Vec<Node> = Vec::new();
    let mut valid = true;
    let add = |nodes: &mut Vec<Node>, record: &Value, own: bool| {
        let id = record["recordId"].as_str().unwrap_or_default().to_owned();
        match nodes.iter_mut().find(|n| n.id == id) {
            Some(n) => n.own |= own,
            None => nodes.push(Node {
                id,
                record: record.clone(),
                own,
            }),
        }
    };
    for r in recorded {
        let id = r.args.as_ref().and_then(|a| a["recordId"].as_str());
        let Some(found) = reader.lineage(id.unwrap_or_default(), 16).await? else {
            continue;
        };
        valid &= found["lineageValid"] == true;
        add(&mut nodes, &found["record"], true);
        for kin in ["ancestors", "descendants"] {
            for k in found[kin].as_array().into_iter().flatten() {
                add(&mut nodes, k, false);
            }
        }
    }
    let ids: BTreeSet<&str> = nodes.iter().map(|n| n.id.as_str()).collect();
    let edges = nodes
        .iter()
        .flat_map(|n| {
            n.record["parents"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .filter(|p| ids.contains(p))
                .map(|p| (p.to_owned(), n.id.clone()))
        })
        .collect();
    Ok((nodes, edges, valid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_reads_what_was_typed() {
        assert_eq!(Query::parse("  "), Query::All);
        let a = "0x6f40892b9eee22086451c93f308c9eb00291b03a";
        assert_eq!(
            Query::parse(a),
            Query::Address("0x6F40892b9Eee22086451C93F308C9Eb00291b03a".into())
        );
        let id = format!("0x{}7", "0".repeat(63));
        assert_eq!(Query::parse(&id), Query::Session(id.clone()));
        assert_eq!(Query::parse("7"), Query::Session(id));
        assert_eq!(
            Query::parse("sandbox e2b:sbx_7f3a (research agent)"),
            Query::Metadata(keccak256(b"sandbox e2b:sbx_7f3a (research agent)").to_string())
        );
    }
}
