//! Audit exports of a session and their verification against the chain.
//!
//! An export is NDJSON: one row per event of the session's timeline (canonical, in chain order),
//! each carrying `prevHash` and `hash = keccak256(prevHash ‖ keccak256(JSON of the row's
//! content))` — a hash chain, so a deleted, altered or reordered row breaks it — then a last
//! line `{"manifest": …}` with the row count, block range, the head block indexed and its hash,
//! and the last row's hash. (CSV exports carry the same columns and hashes.)
//!
//! [`verify`] re-checks an export against a node: the chain of hashes, the manifest, every
//! row's log at its block hash with the same contract, topics, data and transaction, and that
//! no log of the session's contracts naming the session is missing from the range. It names
//! the first row that fails.

use std::collections::BTreeSet;

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use bursar_client::Client;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::store::LogRow;

/// What a row says (everything but its hashes).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Content {
    /// Its position in the export, from 0.
    pub index: u64,
    /// The chain's id.
    pub chain_id: u64,
    /// The log's block.
    pub block_number: u64,
    /// That block's hash.
    pub block_hash: String,
    /// That block's time.
    pub block_timestamp: u64,
    /// The log's transaction.
    pub tx_hash: String,
    /// Its index in the block.
    pub log_index: u64,
    /// The contract that emitted it.
    pub address: String,
    /// Its topics.
    pub topics: Vec<B256>,
    /// Its data.
    pub data: Bytes,
    /// The event's name.
    pub event: Option<String>,
    /// Its decoded arguments.
    pub args: Option<Value>,
}

/// An exported row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    /// What it says.
    #[serde(flatten)]
    pub content: Content,
    /// The previous row's hash (zero for the first).
    pub prev_hash: B256,
    /// `keccak256(prevHash ‖ keccak256(JSON of the content))`.
    pub hash: B256,
}

/// The export's last line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// The session exported.
    pub session_id: String,
    /// The chain's id.
    pub chain_id: u64,
    /// How many rows.
    pub rows: u64,
    /// The first block the rows cover (the session's opening).
    pub from_block: u64,
    /// The last block indexed when exported: the rows are complete up to it.
    pub to_block: u64,
    /// That block's hash.
    pub head_block_hash: String,
    /// The last row's hash (zero without rows).
    pub last_hash: B256,
}

/// The hash of `content` following `prev`.
pub fn link(prev: B256, content: &Content) -> B256 {
    let body = serde_json::to_vec(content).unwrap_or_default();
    let mut buf = prev.to_vec();
    buf.extend_from_slice(keccak256(&body).as_slice());
    keccak256(&buf)
}

/// The export of `rows` (the session's canonical timeline up to `head`).
pub fn export(
    session_id: &str,
    chain_id: u64,
    rows: &[LogRow],
    head: (u64, &str),
) -> (Vec<Row>, Manifest) {
    let mut prev = B256::ZERO;
    let out: Vec<Row> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let content = Content {
                index: i as u64,
                chain_id,
                block_number: r.block_number,
                block_hash: r.block_hash.clone(),
                block_timestamp: r.block_timestamp,
                tx_hash: r.tx_hash.clone(),
                log_index: r.log_index,
                address: r.address.clone(),
                topics: r.topics.clone(),
                data: r.data.clone(),
                event: r.event.clone(),
                args: r.args.clone(),
            };
            let hash = link(prev, &content);
            let row = Row {
                content,
                prev_hash: prev,
                hash,
            };
            prev = hash;
            row
        })
        .collect();
    let manifest = Manifest {
        session_id: session_id.to_owned(),
        chain_id,
        rows: out.len() as u64,
        from_block: rows.first().map_or(head.0, |r| r.block_number),
        to_block: head.0,
        head_block_hash: head.1.to_owned(),
        last_hash: prev,
    };
    (out, manifest)
}

/// The CSV header of an export.
pub const CSV_HEADER: &str =
    "index,chainId,blockNumber,blockHash,blockTimestamp,txHash,logIndex,address,event,args,topics,data,prevHash,hash";

/// A row as a CSV line (JSON fields quoted).
pub fn csv_line(r: &Row) -> String {
    let c = &r.content;
    let quote = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    [
        c.index.to_string(),
        c.chain_id.to_string(),
        c.block_number.to_string(),
        c.block_hash.clone(),
        c.block_timestamp.to_string(),
        c.tx_hash.clone(),
        c.log_index.to_string(),
        c.address.clone(),
        c.event.clone().unwrap_or_default(),
        quote(&c.args.as_ref().map(Value::to_string).unwrap_or_default()),
        quote(
            &c.topics
                .iter()
                .map(B256::to_string)
                .collect::<Vec<_>>()
                .join(" "),
        ),
        c.data.to_string(),
        r.prev_hash.to_string(),
        r.hash.to_string(),
    ]
    .join(",")
}

/// Why an export does not verify.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// A line is not a row or the manifest.
    #[error("line {line}: not a row of an export: {reason}")]
    Malformed {
        /// 1-based.
        line: usize,
        /// Why.
        reason: String,
    },
    /// A row fails a check.
    #[error("row {index}: {reason}")]
    Row {
        /// The row's index.
        index: u64,
        /// Which check.
        reason: String,
    },
    /// The export as a whole fails a check.
    #[error("{0}")]
    Export(String),
    /// The node.
    #[error(transparent)]
    Rpc(#[from] bursar_client::rpc::RpcError),
}

/// What a verification found.
#[derive(Debug)]
pub struct Verified {
    /// Rows checked.
    pub rows: u64,
    /// The manifest.
    pub manifest: Manifest,
}

fn row_error(index: u64, reason: impl Into<String>) -> VerifyError {
    VerifyError::Row {
        index,
        reason: reason.into(),
    }
}

/// Verifies an NDJSON export against `client`'s chain.
pub async fn verify(client: &Client, text: &str) -> Result<Verified, VerifyError> {
    let mut rows = Vec::new();
    let mut manifest: Option<Manifest> = None;
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let malformed = |reason: String| VerifyError::Malformed {
            line: i + 1,
            reason,
        };
        if manifest.is_some() {
            return Err(malformed("a line after the manifest".into()));
        }
        let v: Value = serde_json::from_str(line).map_err(|e| malformed(e.to_string()))?;
        if let Some(m) = v.get("manifest") {
            manifest =
                Some(serde_json::from_value(m.clone()).map_err(|e| malformed(e.to_string()))?);
        } else {
            rows.push(serde_json::from_value::<Row>(v).map_err(|e| malformed(e.to_string()))?);
        }
    }
    let manifest = manifest
        .ok_or_else(|| VerifyError::Export("no manifest: the export is cut short".into()))?;
    // The chain of hashes: each row follows the one before, in order.
    let mut prev = B256::ZERO;
    for (i, r) in rows.iter().enumerate() {
        let index = r.content.index;
        if index != i as u64 {
            return Err(row_error(
                index,
                format!("found at position {i}: rows are missing or out of order"),
            ));
        }
        if r.prev_hash != prev {
            return Err(row_error(
                index,
                "prevHash is not the previous row's hash: a row before it is missing or altered",
            ));
        }
        if link(prev, &r.content) != r.hash {
            return Err(row_error(
                index,
                "its hash does not match its content: the row was altered",
            ));
        }
        prev = r.hash;
    }
    if manifest.rows != rows.len() as u64 || manifest.last_hash != prev {
        return Err(VerifyError::Export(format!(
            "the manifest says {} rows ending in {}, the export has {} ending in {prev}: rows were removed or added at the end",
            manifest.rows, manifest.last_hash, rows.len()
        )));
    }
    // Every row's log, at its block hash.
    let mut contracts: BTreeSet<Address> = BTreeSet::new();
    for r in &rows {
        let c = &r.content;
        let address: Address = c
            .address
            .parse()
            .map_err(|_| row_error(c.index, "bad address"))?;
        contracts.insert(address);
        let block: B256 = c
            .block_hash
            .parse()
            .map_err(|_| row_error(c.index, "bad block hash"))?;
        let logs = client.logs_in_block(&[address], block).await.map_err(|e| {
            row_error(
                c.index,
                format!(
                    "block {} ({}) is not on the chain: {e}",
                    c.block_number, c.block_hash
                ),
            )
        })?;
        let found = logs.iter().find(|l| l.log_index.to::<u64>() == c.log_index);
        let Some(l) = found else {
            return Err(row_error(
                c.index,
                format!(
                    "no log {} of {} in block {}",
                    c.log_index, c.address, c.block_number
                ),
            ));
        };
        if l.topics != c.topics || l.data != c.data || l.transaction_hash.to_string() != c.tx_hash {
            return Err(row_error(c.index, "the chain's log differs from the row"));
        }
    }
    // Nothing missing: every log of those contracts in the range that names the session (an
    // indexed sessionId) is a row.
    let session: U256 = manifest
        .session_id
        .parse()
        .map_err(|_| VerifyError::Export("the manifest's sessionId is not a number".into()))?;
    let topic = B256::from(session);
    let head = client.block(manifest.to_block).await?.ok_or_else(|| {
        VerifyError::Export(format!("the chain has no block {}", manifest.to_block))
    })?;
    if head.hash.to_string() != manifest.head_block_hash {
        return Err(VerifyError::Export(format!(
            "block {} is {} on the chain, the export was made at {}: a reorg since",
            manifest.to_block, head.hash, manifest.head_block_hash
        )));
    }
    let exported: BTreeSet<(String, u64)> = rows
        .iter()
        .map(|r| (r.content.block_hash.clone(), r.content.log_index))
        .collect();
    let contracts: Vec<Address> = contracts.into_iter().collect();
    if !contracts.is_empty() {
        let logs = client
            .logs(&contracts, manifest.from_block, Some(manifest.to_block))
            .await?;
        for l in logs
            .iter()
            .filter(|l| l.topics.iter().skip(1).any(|t| *t == topic))
        {
            if !exported.contains(&(l.block_hash.to_string(), l.log_index.to())) {
                return Err(VerifyError::Export(format!(
                    "log {} of block {} (tx {}) names the session but is not in the export",
                    l.log_index, l.block_number, l.transaction_hash
                )));
            }
        }
    }
    Ok(Verified {
        rows: rows.len() as u64,
        manifest,
    })
}
