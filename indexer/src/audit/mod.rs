//! Audit exports of a session, signed by the indexer, and their verification against the chain.
//!
//! An export is NDJSON: one row per event of the session's timeline (canonical, in chain order),
//! each carrying `prevHash` and `hash = keccak256(prevHash ‖ keccak256(JSON of the row's
//! content))`, then a last line `{"manifest": …}`: the row count, the block range (from the
//! session's opening to the last block indexed, with that block's hash), the last row's hash,
//! the contracts followed (`contracts`, name → address) and the block the indexer follows them
//! from (`deployBlock`), and the indexer's signature over all of it (`signer`, `signature`;
//! [`sign`] says which bytes). CSV exports carry the same columns and hashes, the manifest on a
//! last `# ` line.
//!
//! The hash chain is unkeyed: it catches accidental damage and lets a reader check a prefix,
//! nothing more (anyone can recompute it). The signature says which indexer key made the
//! export. [`verify`] proves the content: from the chain alone it rebuilds the timeline the
//! indexer would export for the session at the manifest's contracts — the session's
//! `SessionOpened` is found on chain, the contracts' logs and the token movements to and from
//! them read from there to `toBlock` and decoded and attributed as the follower does
//! ([`crate::logs`]) — and compares the export to it row by row, every field
//! ([`compare`]). What it cannot know by itself — that the contracts are the real deployment,
//! that the signer is an indexer the auditor trusts — the caller pins ([`Expect`]).

pub mod compare;
mod manifest;
pub mod sign;
mod verify;

use std::collections::BTreeMap;

use alloy_primitives::{keccak256, Address, Bytes, B256};
use bursar_client::Key;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::contracts::Contracts;
use crate::store::LogRow;
pub use manifest::{manifest_line, Manifest};
pub use verify::{verify, Expect, Verified, VerifyError};

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

impl Content {
    /// Stored or rebuilt row `r` at position `index` of an export.
    pub fn of(index: u64, r: &LogRow) -> Self {
        Content {
            index,
            chain_id: r.chain_id,
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
        }
    }
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

/// The hash of `content` following `prev`.
pub fn link(prev: B256, content: &Content) -> B256 {
    let body = serde_json::to_vec(content).unwrap_or_default();
    let mut buf = prev.to_vec();
    buf.extend_from_slice(keccak256(&body).as_slice());
    keccak256(&buf)
}

/// What an indexer's exports say about it: the key that signs them, the contracts followed
/// and the block it follows them from.
#[derive(Clone, Debug)]
pub struct Exporter {
    key: Key,
    contracts: BTreeMap<String, String>,
    deploy_block: u64,
}

impl Exporter {
    /// Exports of `contracts`, followed from `deploy_block` on, signed by `key`.
    pub fn new(key: Key, contracts: &Contracts, deploy_block: u64) -> Self {
        // A session's timeline is made of the Bursar contracts' events: the manifest names
        // those (not the ERC-8004 registries, which name no session).
        let contracts = contracts
            .iter()
            .filter(|(_, name)| crate::contracts::CONTRACTS.contains(name))
            .map(|(a, name)| ((*name).to_owned(), a.to_checksum(None)))
            .collect();
        Exporter {
            key,
            contracts,
            deploy_block,
        }
    }

    /// The address of the key that signs the exports.
    pub fn signer(&self) -> Address {
        self.key.address()
    }

    /// The export of `rows` (session `session_id`'s canonical timeline up to block `head`, a
    /// `(number, hash)`), with its signed manifest.
    pub fn export(
        &self,
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
                let content = Content::of(i as u64, r);
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
            deploy_block: self.deploy_block,
            contracts: self.contracts.clone(),
            signer: String::new(),
            signature: None,
        };
        (out, sign::sign(manifest, &self.key))
    }
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
