//! `deployments/<network>.json`: where each contract is, what code it runs and how it got
//! there.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use alloy_primitives::{Address, Bytes, B256};
use serde::{Deserialize, Serialize};

/// The record's format version; bumped on incompatible changes.
pub const FORMAT: u32 = 1;

/// One network's deployment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentRecord {
    pub format: u32,
    pub network: String,
    pub chain_id: u64,
    pub deployer: Address,
    /// The factory every contract was deployed through (it runs the constructor in the same
    /// transaction as creation and activation).
    pub stylus_deployer: Address,
    /// `git rev-parse HEAD` of the source tree the artifacts came from, when known.
    pub git_commit: Option<String>,
    pub toolchain: Toolchain,
    /// By contract name (`sessionWallet`, ...).
    pub contracts: BTreeMap<String, ContractRecord>,
    /// Wiring transactions (e.g. the receipt registry authorising the wallet).
    pub wiring: Vec<WiringRecord>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Toolchain {
    /// The compiler that built the WASM (from `sizes.json`).
    pub rustc: String,
    pub wasm_opt: String,
    pub stylus_sdk: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContractRecord {
    pub address: Address,
    /// `keccak256` of the on-chain code (the activation key).
    pub code_hash: B256,
    /// Bytes on chain (`EFF00000 || brotli(wasm)`), against the 24,576-byte limit.
    pub compressed_size: usize,
    pub wasm_size: usize,
    /// ABI-encoded constructor arguments (empty without a constructor).
    pub constructor_args: Bytes,
    pub deploy_tx: B256,
    pub deploy_block: u64,
    /// The transaction that activated the code: the deploy transaction itself, or `None` when
    /// the same code was already active on the chain.
    pub activation_tx: Option<B256>,
    pub activation_block: Option<u64>,
    /// The contract's full JSON ABI (functions, events, errors).
    pub abi: serde_json::Value,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WiringRecord {
    pub description: String,
    pub tx: B256,
    pub block: u64,
}

/// Reading or writing a record failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{path}: {reason}")]
    Io { path: PathBuf, reason: String },
    #[error("{path} is not a deployment record: {reason}")]
    Format { path: PathBuf, reason: String },
}

impl DeploymentRecord {
    /// The record at `path`, if the file exists.
    pub fn read(path: &Path) -> Result<Option<Self>, RecordError> {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(RecordError::Io {
                    path: path.to_path_buf(),
                    reason: e.to_string(),
                })
            }
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| RecordError::Format {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })
    }

    /// Writes the record (pretty JSON) atomically: a temporary file renamed into place.
    pub fn write(&self, path: &Path) -> Result<(), RecordError> {
        let io = |e: std::io::Error| RecordError::Io {
            path: path.to_path_buf(),
            reason: e.to_string(),
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let text = serde_json::to_string_pretty(self).expect("records serialize") + "\n";
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, text).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }

    pub fn address(&self, contract: &str) -> Option<Address> {
        self.contracts.get(contract).map(|c| c.address)
    }
}
