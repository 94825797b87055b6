//! The state file of `bursar devnet --state FILE` ([`Chain::save_state`] /
//! [`Chain::load_state`]): JSON with a format version and the chain id.
//!
//! What is saved: every account of the current world state (balance, nonce, code, non-zero
//! storage — program activations included, as they are ArbWasm storage) and every block with
//! its header, transactions (EIP-2718 bytes, sender) and receipts, so block numbers and hashes,
//! `eth_getTransactionReceipt` and `eth_getLogs` answer as before after a reload. Not saved:
//! per-block states (see the [`crate::chain`] docs for what historical queries do then), the
//! pool, snapshots, filters and compiled modules (programs compile again on first call).
//!
//! Headers are stored as their RLP and checked against the stored hashes on load, so a file
//! whose blocks would not hash the same is refused rather than served.
//!
//! [`Chain::save_state`]: crate::Chain::save_state
//! [`Chain::load_state`]: crate::Chain::load_state

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use alloy_consensus::{Header, TxEnvelope};
use alloy_eips::eip2718::{Decodable2718, Encodable2718};
use alloy_primitives::{Address, Bloom, Bytes, B256, U256};
use alloy_rlp::Decodable;
use serde::{Deserialize, Serialize};

use crate::chain::types::{Block, MinedTx, Receipt, ReceiptLog};
use crate::state::{Log, State};

/// The format written by this version; files of another version are refused.
pub const FORMAT_VERSION: u32 = 1;

/// Why a state file cannot be written or loaded.
#[derive(Debug, thiserror::Error)]
pub enum StateFileError {
    /// Reading or writing the file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file that could not be read or written.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// The file is not valid JSON of the state-file shape.
    #[error("{} is not a bursar devnet state file: {source}", path.display())]
    Parse {
        /// The file that could not be parsed.
        path: PathBuf,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// The file was written in a format version other than [`FORMAT_VERSION`].
    #[error("state file format version {found} is not supported (this devnet reads version {FORMAT_VERSION})")]
    Version {
        /// The version recorded in the file.
        found: u32,
    },
    /// The file was saved from a chain with a different chain id.
    #[error("the state file is for chain id {file}, but this chain's id is {chain} (start with --chain-id {file} or use another file)")]
    ChainId {
        /// The chain id recorded in the file.
        file: u64,
        /// The running chain's id.
        chain: u64,
    },
    /// The chain asks for the EVM fixtures, but the file was saved from a chain without them
    /// (loading it would silently leave USDC and Safe out).
    #[error("{} was saved from a chain without the EVM fixtures (no USDC at {}): remove it to start a new chain with them, or start without them", path.display(), bursar_bindings::evm::USDC)]
    WithoutFixtures {
        /// The state file.
        path: PathBuf,
    },
    /// The content parses but is inconsistent (a header that does not hash to its stored
    /// hash, undecodable transaction bytes, ...).
    #[error("the state file is corrupt: {0}")]
    Corrupt(String),
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StateFile {
    version: u32,
    chain_id: u64,
    accounts: BTreeMap<Address, AccountEntry>,
    /// From genesis to the head.
    blocks: Vec<BlockEntry>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AccountEntry {
    balance: U256,
    nonce: u64,
    #[serde(default, skip_serializing_if = "<[u8]>::is_empty")]
    code: Bytes,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    storage: BTreeMap<B256, B256>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockEntry {
    hash: B256,
    /// RLP of the header.
    header: Bytes,
    transactions: Vec<TxEntry>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TxEntry {
    hash: B256,
    /// EIP-2718 encoding of the signed transaction.
    raw: Bytes,
    from: Address,
    receipt: ReceiptEntry,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReceiptEntry {
    status: bool,
    cumulative_gas_used: u64,
    gas_used: u64,
    effective_gas_price: u128,
    logs: Vec<LogEntry>,
    logs_bloom: Bloom,
    contract_address: Option<Address>,
    #[serde(default, skip_serializing_if = "<[u8]>::is_empty")]
    revert_data: Bytes,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogEntry {
    address: Address,
    topics: Vec<B256>,
    data: Bytes,
    log_index: u64,
}

/// A chain read back from a file, checked.
pub(crate) struct LoadedChain {
    pub state: State,
    /// Non-empty, numbered from 0, hash-chained.
    pub blocks: Vec<Block>,
    pub txs: Vec<MinedTx>,
}

impl StateFile {
    /// The file for a chain: its world state and its blocks, each with its transactions.
    pub(crate) fn new<'a>(
        chain_id: u64,
        state: &State,
        blocks: impl Iterator<Item = (&'a Block, Vec<&'a MinedTx>)>,
    ) -> Self {
        let accounts = state
            .accounts()
            .map(|(address, a)| {
                let entry = AccountEntry {
                    balance: a.balance,
                    nonce: a.nonce,
                    code: a.code.clone(),
                    storage: state.storage_of(*address).map(|(k, v)| (*k, *v)).collect(),
                };
                (*address, entry)
            })
            .collect();
        let blocks = blocks
            .map(|(block, txs)| BlockEntry {
                hash: block.hash,
                header: alloy_rlp::encode(&block.header).into(),
                transactions: txs.into_iter().map(TxEntry::new).collect(),
            })
            .collect();
        StateFile {
            version: FORMAT_VERSION,
            chain_id,
            accounts,
            blocks,
        }
    }

    /// Writes the file atomically: a temporary file in the same directory, synced, then
    /// renamed over `path`, so a crash never leaves a truncated state file.
    pub(crate) fn write(&self, path: &Path) -> Result<(), StateFileError> {
        let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
        tmp_name.push(".tmp");
        let tmp = path.with_file_name(tmp_name);
        let io = |source| StateFileError::Io {
            path: tmp.clone(),
            source,
        };
        let file = std::fs::File::create(&tmp).map_err(io)?;
        let mut out = std::io::BufWriter::new(file);
        serde_json::to_writer(&mut out, self).map_err(|e| io(e.into()))?;
        let file = out.into_inner().map_err(|e| io(e.into_error()))?;
        file.sync_all().map_err(io)?;
        std::fs::rename(&tmp, path).map_err(|source| StateFileError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Reads and parses `path`, refusing other format versions before parsing the rest.
    pub(crate) fn read(path: &Path) -> Result<Self, StateFileError> {
        let bytes = std::fs::read(path).map_err(|source| StateFileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let parse = |source| StateFileError::Parse {
            path: path.to_path_buf(),
            source,
        };
        #[derive(Deserialize)]
        struct Versioned {
            version: u32,
        }
        let Versioned { version } = serde_json::from_slice(&bytes).map_err(parse)?;
        if version != FORMAT_VERSION {
            return Err(StateFileError::Version { found: version });
        }
        serde_json::from_slice(&bytes).map_err(parse)
    }

    /// Checks the file against the running chain's id and rebuilds state, blocks and
    /// transactions.
    pub(crate) fn into_chain(self, chain_id: u64) -> Result<LoadedChain, StateFileError> {
        if self.chain_id != chain_id {
            return Err(StateFileError::ChainId {
                file: self.chain_id,
                chain: chain_id,
            });
        }
        let corrupt = StateFileError::Corrupt;
        if self.blocks.is_empty() {
            return Err(corrupt("no blocks".into()));
        }
        let mut state = State::new();
        for (address, a) in self.accounts {
            state.touch(address);
            state.set_balance(address, a.balance);
            state.set_nonce(address, a.nonce);
            if !a.code.is_empty() {
                state.set_code(address, a.code);
            }
            for (slot, value) in a.storage {
                state.set_storage(address, slot, value);
            }
        }
        // Drop the journal and EIP-2200 originals the setters recorded: this is the state
        // between transactions.
        state.begin_tx(std::iter::empty());

        let mut blocks = Vec::with_capacity(self.blocks.len());
        let mut txs = Vec::new();
        let mut parent = B256::ZERO;
        for (number, b) in self.blocks.into_iter().enumerate() {
            let header = Header::decode(&mut b.header.as_ref())
                .map_err(|e| corrupt(format!("block {number}: header rlp: {e}")))?;
            if header.hash_slow() != b.hash
                || header.number != number as u64
                || header.parent_hash != parent
            {
                return Err(corrupt(format!(
                    "block {number} ({}) does not hash or chain as recorded",
                    b.hash
                )));
            }
            parent = b.hash;
            let mut hashes = Vec::with_capacity(b.transactions.len());
            for (index, t) in b.transactions.into_iter().enumerate() {
                let envelope = TxEnvelope::decode_2718(&mut t.raw.as_ref())
                    .map_err(|e| corrupt(format!("transaction {}: {e}", t.hash)))?;
                if *envelope.tx_hash() != t.hash {
                    return Err(corrupt(format!(
                        "transaction {} hashes differently",
                        t.hash
                    )));
                }
                hashes.push(t.hash);
                txs.push(MinedTx {
                    envelope,
                    hash: t.hash,
                    from: t.from,
                    block_number: number as u64,
                    block_hash: b.hash,
                    block_timestamp: header.timestamp,
                    index: index as u64,
                    receipt: t.receipt.into(),
                });
            }
            blocks.push(Block {
                header,
                hash: b.hash,
                transactions: hashes,
            });
        }
        Ok(LoadedChain { state, blocks, txs })
    }
}

impl TxEntry {
    fn new(tx: &MinedTx) -> Self {
        let r = &tx.receipt;
        TxEntry {
            hash: tx.hash,
            raw: tx.envelope.encoded_2718().into(),
            from: tx.from,
            receipt: ReceiptEntry {
                status: r.status,
                cumulative_gas_used: r.cumulative_gas_used,
                gas_used: r.gas_used,
                effective_gas_price: r.effective_gas_price,
                logs: r
                    .logs
                    .iter()
                    .map(|l| LogEntry {
                        address: l.log.address,
                        topics: l.log.topics.clone(),
                        data: l.log.data.clone(),
                        log_index: l.log_index,
                    })
                    .collect(),
                logs_bloom: r.logs_bloom,
                contract_address: r.contract_address,
                revert_data: r.revert_data.clone(),
            },
        }
    }
}

impl From<ReceiptEntry> for Receipt {
    fn from(r: ReceiptEntry) -> Self {
        Receipt {
            status: r.status,
            cumulative_gas_used: r.cumulative_gas_used,
            gas_used: r.gas_used,
            effective_gas_price: r.effective_gas_price,
            logs: r
                .logs
                .into_iter()
                .map(|l| ReceiptLog {
                    log: Log {
                        address: l.address,
                        topics: l.topics,
                        data: l.data,
                    },
                    log_index: l.log_index,
                })
                .collect(),
            logs_bloom: r.logs_bloom,
            contract_address: r.contract_address,
            revert_data: r.revert_data,
        }
    }
}
