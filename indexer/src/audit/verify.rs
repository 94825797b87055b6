//! Verification of an export against a node: the I/O around [`super::compare`].

use std::collections::BTreeMap;

use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::SolEvent;
use bursar_bindings::wallet::ISessionWallet::SessionOpened;
use bursar_client::ids::{parse_session_id, session_id_text};
use bursar_client::Client;
use futures_util::{StreamExt, TryStreamExt};
use serde_json::Value;

use super::compare::{first_difference, Difference, FIELDS};
use super::{link, sign, Content, Manifest, Row};
use crate::contracts::{Contracts, CONTRACTS};
use crate::store::LogRow;

/// What the auditor pins: without a pin, a consistent export of other contracts or by another
/// key verifies.
#[derive(Clone, Debug, Default)]
pub struct Expect {
    /// The export key of the indexer trusted (its `/health` says `exportSigner`).
    pub signer: Option<Address>,
    /// The real deployment's contracts (as [`crate::followed`] reads them from its record).
    pub contracts: Option<Contracts>,
}

/// What a verification found.
#[derive(Debug)]
pub struct Verified {
    /// Rows checked.
    pub rows: u64,
    /// The manifest.
    pub manifest: Manifest,
    /// The key that signed it.
    pub signer: Address,
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
    /// The manifest is unsigned, or its signature is not its signer's.
    #[error("the manifest's signature does not verify: {0}")]
    Signature(String),
    /// The manifest is signed by another key than the one pinned.
    #[error("the manifest is signed by {found}, not by {pinned} (the signer pinned)")]
    Signer {
        /// Its signer.
        found: Address,
        /// The signer pinned.
        pinned: Address,
    },
    /// The manifest's contracts are not the ones pinned.
    #[error("the manifest's {name} is {found}, the deployment's is {pinned}")]
    Contract {
        /// Which contract.
        name: &'static str,
        /// The manifest's address.
        found: Address,
        /// The pinned one.
        pinned: Address,
    },
    /// A row breaks the hash chain.
    #[error("row {index}: {reason}")]
    Row {
        /// The row's index.
        index: u64,
        /// Which check.
        reason: String,
    },
    /// The rows are not the chain's timeline of the session.
    #[error(transparent)]
    Differs(#[from] Difference),
    /// The manifest does not match the chain, or is malformed.
    #[error("{0}")]
    Export(String),
    /// The node.
    #[error(transparent)]
    Rpc(#[from] bursar_client::rpc::RpcError),
}

/// Verifies an NDJSON export against `client`'s chain: its signature and the pins of `expect`,
/// its hash chain, and that its rows are exactly the timeline the chain gives for the session
/// at the manifest's contracts up to `toBlock`. Names the first thing that fails.
pub async fn verify(client: &Client, text: &str, expect: &Expect) -> Result<Verified, VerifyError> {
    let (rows, manifest) = parse(text)?;
    let signer = check_signature(&manifest)?;
    let contracts = contracts(&manifest)?;
    check_pins(signer, &contracts, expect)?;
    check_hash_chain(&rows, &manifest)?;
    let chain_id = client.chain_id().await?;
    if chain_id != manifest.chain_id {
        return Err(VerifyError::Export(format!(
            "the export is of chain {}, the node's is chain {chain_id}",
            manifest.chain_id
        )));
    }
    check_head(client, &manifest).await?;
    let session = parse_session_id(&manifest.session_id).ok_or_else(|| {
        VerifyError::Export("the manifest's sessionId is not a session id".into())
    })?;
    let wallet = contracts[0].0; // CONTRACTS names it first
    let opened = opening(client, wallet, session, &manifest).await?;
    if opened != manifest.from_block {
        return Err(VerifyError::Export(format!(
            "manifest.fromBlock is {}, but the session opened in block {opened}",
            manifest.from_block
        )));
    }
    let session = session_id_text(session);
    let chain = timeline(
        client,
        chain_id,
        &contracts,
        &session,
        (opened, manifest.to_block),
    )
    .await?;
    let exported: Vec<Content> = rows.into_iter().map(|r| r.content).collect();
    if let Some(d) = first_difference(&chain, &exported, manifest.to_block) {
        return Err(d.into());
    }
    Ok(Verified {
        rows: exported.len() as u64,
        manifest,
        signer,
    })
}

/// The rows and the manifest of an NDJSON export.
fn parse(text: &str) -> Result<(Vec<Row>, Manifest), VerifyError> {
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
            // Neither the hash nor the comparison would cover another field, which could then
            // tell a reader anything.
            let is_row_field = |k: &&String| {
                FIELDS.contains(&k.as_str()) || ["prevHash", "hash"].contains(&k.as_str())
            };
            if let Some(unknown) = v
                .as_object()
                .and_then(|o| o.keys().find(|k| !is_row_field(k)))
            {
                return Err(malformed(format!("unknown field `{unknown}`")));
            }
            rows.push(serde_json::from_value::<Row>(v).map_err(|e| malformed(e.to_string()))?);
        }
    }
    let manifest = manifest
        .ok_or_else(|| VerifyError::Export("no manifest: the export is cut short".into()))?;
    Ok((rows, manifest))
}

/// The manifest's signer, once its signature proves it.
fn check_signature(manifest: &Manifest) -> Result<Address, VerifyError> {
    let bad = |reason: String| VerifyError::Signature(reason);
    let signer: Address = manifest
        .signer
        .parse()
        .map_err(|_| bad(format!("signer {:?} is not an address", manifest.signer)))?;
    if manifest.signature.is_none() {
        return Err(bad("the manifest has none".into()));
    }
    match sign::recover(manifest) {
        Some(found) if found == signer => Ok(signer),
        Some(found) => Err(bad(format!(
            "it is {found}'s, the manifest names {signer}: the manifest or its signature was altered"
        ))),
        None => Err(bad("it is not a secp256k1 signature".into())),
    }
}

/// The manifest's contracts, the wallet first: exactly the four an indexer follows (a timeline
/// rebuilt without one would miss its rows).
fn contracts(manifest: &Manifest) -> Result<Contracts, VerifyError> {
    let names: Vec<&str> = manifest.contracts.keys().map(String::as_str).collect();
    let mut want = CONTRACTS.to_vec();
    want.sort_unstable();
    if names != want {
        return Err(VerifyError::Export(format!(
            "the manifest's contracts are {names:?}, an export names {}",
            CONTRACTS.join(", ")
        )));
    }
    CONTRACTS
        .iter()
        .map(|name| {
            let text = &manifest.contracts[*name];
            let address = text.parse().map_err(|_| {
                VerifyError::Export(format!("the manifest's {name} {text:?} is not an address"))
            })?;
            Ok((address, *name))
        })
        .collect()
}

/// The signer and the contracts, as the auditor pinned them.
fn check_pins(signer: Address, contracts: &Contracts, expect: &Expect) -> Result<(), VerifyError> {
    if let Some(pinned) = expect.signer.filter(|p| *p != signer) {
        return Err(VerifyError::Signer {
            found: signer,
            pinned,
        });
    }
    for (found, name) in contracts {
        let pinned = expect
            .contracts
            .as_ref()
            .and_then(|p| p.iter().find(|(_, n)| n == name))
            .map(|(a, _)| *a);
        if let Some(pinned) = pinned.filter(|p| p != found) {
            return Err(VerifyError::Contract {
                name,
                found: *found,
                pinned,
            });
        }
    }
    Ok(())
}

/// Each row follows the one before, in order, and the manifest's count and last hash are the
/// rows'.
fn check_hash_chain(rows: &[Row], manifest: &Manifest) -> Result<(), VerifyError> {
    let row_error = |index: u64, reason: &str| VerifyError::Row {
        index,
        reason: reason.into(),
    };
    let mut prev = B256::ZERO;
    for (i, r) in rows.iter().enumerate() {
        let index = r.content.index;
        if index != i as u64 {
            return Err(VerifyError::Row {
                index,
                reason: format!("found at position {i}: rows are missing or out of order"),
            });
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
    Ok(())
}

/// The chain still has the block the export was made at.
async fn check_head(client: &Client, manifest: &Manifest) -> Result<(), VerifyError> {
    let head = client.block(manifest.to_block).await?.ok_or_else(|| {
        VerifyError::Export(format!("the chain has no block {}", manifest.to_block))
    })?;
    if head.hash.to_string() != manifest.head_block_hash {
        return Err(VerifyError::Export(format!(
            "block {} is {} on the chain, the export was made at {}: a reorg since",
            manifest.to_block, head.hash, manifest.head_block_hash
        )));
    }
    Ok(())
}

/// The block of the session's one `SessionOpened` at `wallet`, searched from the manifest's
/// deploy block to its `toBlock` (a later deploy block than the true one only hides the
/// opening: the export then fails).
async fn opening(
    client: &Client,
    wallet: Address,
    session: U256,
    manifest: &Manifest,
) -> Result<u64, VerifyError> {
    let topics = [
        vec![SessionOpened::SIGNATURE_HASH],
        vec![B256::from(session)],
    ];
    let blocks = (manifest.deploy_block, manifest.to_block);
    let at = [wallet];
    let read = |b| client.logs_matching(&at, &topics, b);
    let (logs, _) = bursar_client::ranges::in_ranges(blocks, read, |_, _| {}).await?;
    match logs.as_slice() {
        [one] => Ok(one.block_number.to()),
        found => Err(VerifyError::Export(format!(
            "the chain has {} SessionOpened of session {} at the wallet {wallet} in blocks {}..={}, not one",
            found.len(),
            session_id_text(session),
            blocks.0,
            blocks.1
        ))),
    }
}

/// The session's timeline over `blocks` (from its opening), as the indexer builds it: the
/// logs it follows, decoded and attributed, each with its block's time.
async fn timeline(
    client: &Client,
    chain_id: u64,
    contracts: &Contracts,
    session: &str,
    blocks: (u64, u64),
) -> Result<Vec<Content>, VerifyError> {
    let addresses: Vec<Address> = contracts.iter().map(|(a, _)| *a).collect();
    let read = |b| crate::logs::query(client, &addresses, b);
    let (logs, _) = bursar_client::ranges::in_ranges(blocks, read, |_, _| {}).await?;
    let mut rows: Vec<LogRow> = logs
        .iter()
        .map(|l| crate::logs::row(chain_id, contracts, l, 0))
        .collect();
    // From the opening on, all the session's receipts and records are in range: a link to an
    // earlier one is another session's.
    crate::logs::attribute(&mut rows);
    rows.retain(|r| r.session_id.as_deref() == Some(session));
    let times = block_times(client, &rows).await?;
    Ok(rows
        .iter_mut()
        .enumerate()
        .map(|(i, r)| {
            r.block_timestamp = times[&r.block_number];
            Content::of(i as u64, r)
        })
        .collect())
}

/// The time of each block of `rows`, from its header (which must be the rows' block).
async fn block_times(client: &Client, rows: &[LogRow]) -> Result<BTreeMap<u64, u64>, VerifyError> {
    let mut blocks: Vec<(u64, &str)> = rows
        .iter()
        .map(|r| (r.block_number, r.block_hash.as_str()))
        .collect();
    blocks.dedup();
    futures_util::stream::iter(blocks)
        .map(|(number, hash)| async move {
            let header = client.block(number).await?;
            match header {
                Some(h) if h.hash.to_string() == hash => Ok((number, h.timestamp.to())),
                _ => Err(VerifyError::Export(format!(
                    "block {number} changed while it was read (a reorg): verify again"
                ))),
            }
        })
        .buffered(16)
        .try_collect()
        .await
}
