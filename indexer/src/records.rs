//! Receipts and provenance records, as their events tell them: a receipt with its
//! acknowledgement, a record with its revocation and the purchase its inputs name, and a
//! record's lineage — its ancestors and
//! descendants, with `lineageValid` false when the record or any ancestor is revoked (the
//! contract's `isValid` looks at one record only).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use alloy_primitives::B256;
use bursar_bindings::receipts::{receipt_commitment, Receipt};
use serde::Serialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

use crate::metrics::Metrics;
use crate::store::{LogFilter, LogRow, Store, StoreError};

/// Where an event is on chain, and how final.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Chain {
    /// Its block.
    pub block_number: u64,
    /// Its block's hash.
    pub block_hash: String,
    /// Its block's time (unix seconds).
    pub block_timestamp: u64,
    /// Its transaction.
    pub tx_hash: String,
    /// Its index in the block.
    pub log_index: u64,
    /// `latest`, `safe` or `finalized`, by the node's block tags.
    pub finality: &'static str,
}

/// Where event `r` is on chain, with its finality.
pub fn chain(metrics: &Metrics, r: &LogRow) -> Chain {
    Chain {
        block_number: r.block_number,
        block_hash: r.block_hash.clone(),
        block_timestamp: r.block_timestamp,
        tx_hash: r.tx_hash.clone(),
        log_index: r.log_index,
        finality: metrics.finality(r.block_number),
    }
}

/// Reads receipts and records as of a block.
#[derive(Clone, Copy, Debug)]
pub struct Records<'a> {
    /// The database.
    pub store: &'a Store,
    /// The node's safe and finalized blocks, for the events' finality.
    pub metrics: &'a Metrics,
    /// The last block counted: later events (an acknowledgement, a revocation) are not.
    pub at: u64,
}

fn arg<'a>(r: &'a LogRow, name: &str) -> Option<&'a str> {
    r.args.as_ref()?.get(name)?.as_str()
}

/// The receipt a `ReceiptRecorded` row announces (what its commitment hashes).
pub fn receipt_of(r: &LogRow) -> Receipt {
    fn parsed<T: std::str::FromStr + Default>(r: &LogRow, name: &str) -> T {
        arg(r, name)
            .and_then(|v| v.parse().ok())
            .unwrap_or_default()
    }
    Receipt {
        sessionId: parsed(r, "sessionId"),
        payer: parsed(r, "payer"),
        payee: parsed(r, "payee"),
        token: parsed(r, "token"),
        amount: parsed(r, "amount"),
        purpose: parsed(r, "purpose"),
        timestamp: r
            .args
            .as_ref()
            .and_then(|a| a.get("timestamp"))
            .and_then(Value::as_u64)
            .unwrap_or_default(),
    }
}

impl Records<'_> {
    /// The canonical event `event` whose argument `field` is `id`, if any.
    async fn one(&self, event: &str, field: &str, id: &str) -> Result<Option<LogRow>, StoreError> {
        Ok(self
            .store
            .logs(&LogFilter {
                event: Some(event.into()),
                args: vec![(field.into(), id.into())],
                to_block: Some(self.at),
                limit: 1,
                ..LogFilter::default()
            })
            .await?
            .into_iter()
            .next())
    }

    /// Receipt `recorded` (its `ReceiptRecorded`) with its acknowledgement.
    pub async fn receipt(&self, recorded: &LogRow) -> Result<Value, StoreError> {
        let id = arg(recorded, "receiptId").unwrap_or_default();
        let ack = self.one("ReceiptAcknowledged", "receiptId", id).await?;
        let mut v = recorded.args.clone().unwrap_or(Value::Null);
        v["recorded"] = json!(chain(self.metrics, recorded));
        v["acknowledged"] = json!(ack.is_some());
        v["acknowledgement"] = ack.map_or(
            Value::Null,
            |a| json!({ "responseHash": arg(&a, "responseHash"), "at": chain(self.metrics, &a) }),
        );
        Ok(v)
    }

    /// Receipt `id` (decimal), if recorded.
    pub async fn receipt_by_id(&self, id: &str) -> Result<Option<Value>, StoreError> {
        match self.one("ReceiptRecorded", "receiptId", id).await? {
            Some(r) => Ok(Some(self.receipt(&r).await?)),
            None => Ok(None),
        }
    }

    /// Record `recorded` (its `ProvenanceRecorded`) with its revocation and validity.
    pub async fn record(&self, recorded: &LogRow) -> Result<Value, StoreError> {
        let id = arg(recorded, "recordId").unwrap_or_default();
        let revoked = self.one("ProvenanceRevoked", "recordId", id).await?;
        let mut v = recorded.args.clone().unwrap_or(Value::Null);
        v["recorded"] = json!(chain(self.metrics, recorded));
        v["valid"] = json!(revoked.is_none());
        v["purchase"] = self.purchase(recorded).await?;
        v["revocation"] = revoked.map_or(
        Value::Null,
        |r| json!({ "by": arg(&r, "by"), "reason": arg(&r, "reason"), "at": chain(self.metrics, &r) }),
    );
        Ok(v)
    }

    /// The receipt a record names as its inputs (a session that bought what it produced from
    /// records that receipt's commitment as `inputs`): `{receiptId, payee, token, amount}`, or
    /// null.
    async fn purchase(&self, recorded: &LogRow) -> Result<Value, StoreError> {
        let (Some(session), Some(inputs)) = (recorded.session_id.clone(), arg(recorded, "inputs"))
        else {
            return Ok(Value::Null);
        };
        let Ok(inputs) = inputs.parse::<B256>() else {
            return Ok(Value::Null);
        };
        let receipts = self
            .store
            .logs(&LogFilter {
                event: Some("ReceiptRecorded".into()),
                session_id: Some(session),
                to_block: Some(self.at),
                limit: u64::MAX,
                ..LogFilter::default()
            })
            .await?;
        let bought = receipts
            .iter()
            .find(|r| receipt_commitment(&receipt_of(r)) == inputs);
        Ok(bought.map_or(Value::Null, |r| {
            json!({
                "receiptId": arg(r, "receiptId"),
                "payee": arg(r, "payee"),
                "token": arg(r, "token"),
                "amount": arg(r, "amount"),
            })
        }))
    }

    /// Record `id` (decimal), if recorded.
    pub async fn record_by_id(&self, id: &str) -> Result<Option<Value>, StoreError> {
        match self.one("ProvenanceRecorded", "recordId", id).await? {
            Some(r) => Ok(Some(self.record(&r).await?)),
            None => Ok(None),
        }
    }

    /// Record `id`'s lineage up to `depth` generations each way; `None` for an unknown record.
    pub async fn lineage(&self, id: &str, depth: u32) -> Result<Option<Value>, StoreError> {
        let Some(root) = self.record_by_id(id).await? else {
            return Ok(None);
        };
        // Ancestors, breadth first, each once.
        let mut ancestors: BTreeMap<String, (u32, Value)> = BTreeMap::new();
        let mut queue: VecDeque<(Value, u32)> = VecDeque::from([(root.clone(), 0)]);
        let mut lineage_valid = root["valid"] == true;
        while let Some((r, d)) = queue.pop_front() {
            if d == depth {
                continue;
            }
            for parent in r["parents"].as_array().into_iter().flatten() {
                let Some(p) = parent.as_str() else { continue };
                if ancestors.contains_key(p) {
                    continue;
                }
                let Some(found) = self.record_by_id(p).await? else {
                    continue;
                };
                lineage_valid &= found["valid"] == true;
                ancestors.insert(p.to_owned(), (d + 1, found.clone()));
                queue.push_back((found, d + 1));
            }
        }
        // Descendants: records naming one of ours among their parents.
        let mut descendants: Vec<(u32, Value)> = Vec::new();
        let mut seen: BTreeSet<String> = BTreeSet::from([id.to_owned()]);
        let mut frontier = vec![id.to_owned()];
        for d in 1..=depth {
            let mut next = Vec::new();
            for parent in &frontier {
                for child in self.store.provenance_children(parent, self.at).await? {
                    let Some(cid) = arg(&child, "recordId").map(str::to_owned) else {
                        continue;
                    };
                    if seen.insert(cid.clone()) {
                        descendants.push((d, self.record(&child).await?));
                        next.push(cid);
                    }
                }
            }
            frontier = next;
        }
        let with_depth = |(d, mut v): (u32, Value)| {
            v["depth"] = json!(d);
            v
        };
        Ok(Some(json!({
            "record": root,
            "lineageValid": lineage_valid,
            "ancestors": ancestors.into_values().map(with_depth).collect::<Vec<_>>(),
            "descendants": descendants.into_iter().map(with_depth).collect::<Vec<_>>(),
        })))
    }
}
