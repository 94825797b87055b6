//! `deployments/<network>.json`: where each contract is, what code it runs and how it got
//! there.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use alloy_primitives::{Address, Bytes, B256};
use bursar_bindings::{erc8004, evm};
use serde::{Deserialize, Serialize};

/// The record's format version; bumped on incompatible changes.
pub const FORMAT: u32 = 1;

/// One network's deployment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentRecord {
    /// The record format version, [`FORMAT`] when written.
    pub format: u32,
    /// The network's name (the `<network>` of the file name).
    pub network: String,
    /// The chain id the RPC endpoint reported during the deployment.
    pub chain_id: u64,
    /// The account that sent every deployment and wiring transaction.
    pub deployer: Address,
    /// The factory every contract was deployed through (it runs the constructor in the same
    /// transaction as creation and activation).
    pub stylus_deployer: Address,
    /// `git rev-parse HEAD` of the source tree the artifacts came from, when known.
    pub git_commit: Option<String>,
    /// The tools the contracts were built with.
    pub toolchain: Toolchain,
    /// By contract name (`sessionWallet`, ...).
    pub contracts: BTreeMap<String, ContractRecord>,
    /// Wiring transactions (e.g. the receipt registry authorising the wallet).
    pub wiring: Vec<WiringRecord>,
    /// The EVM contracts sessions meet on this chain, found at their Arbitrum One addresses
    /// when the deployment ran (`usdc`, `safe`, `multicall3`, ...; see [`EVM_CONTRACTS`]): on
    /// Arbitrum itself, or on a devnet started with `--with-evm-fixtures`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub evm: BTreeMap<String, EvmContractRecord>,
}

/// An EVM contract found on the chain (not deployed by Bursar).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvmContractRecord {
    /// Its address.
    pub address: Address,
    /// `keccak256` of its code when the deployment ran.
    pub code_hash: B256,
}

/// The EVM contracts a record looks for, by key (`bursar_bindings::evm` has the addresses).
pub const EVM_CONTRACTS: &[(&str, Address)] = &[
    ("usdc", evm::USDC),
    ("safe", evm::SAFE),
    ("safeL2", evm::SAFE_L2),
    ("safeProxyFactory", evm::SAFE_PROXY_FACTORY),
    ("safeFallbackHandler", evm::SAFE_FALLBACK_HANDLER),
    ("safeMultiSend", evm::SAFE_MULTI_SEND),
    ("safeMultiSendCallOnly", evm::SAFE_MULTI_SEND_CALL_ONLY),
    ("multicall3", evm::MULTICALL3),
    ("permit2", evm::PERMIT2),
    ("identityRegistry", erc8004::IDENTITY_REGISTRY),
    ("reputationRegistry", erc8004::REPUTATION_REGISTRY),
];

/// The tools that built the deployed contracts, recorded so auditors can reproduce the code.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Toolchain {
    /// The compiler that built the WASM (from `sizes.json`).
    pub rustc: String,
    /// The `wasm-opt --version` line of the optimizer that shrank the WASM (from `sizes.json`).
    pub wasm_opt: String,
    /// The stylus-sdk version the contracts are built with.
    pub stylus_sdk: String,
}

/// One deployed contract: where it is, what code it runs and the transactions that put it there.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContractRecord {
    /// The contract's address.
    pub address: Address,
    /// `keccak256` of the on-chain code (the activation key).
    pub code_hash: B256,
    /// Bytes on chain (`EFF00000 || brotli(wasm)`), against the 24,576-byte limit.
    pub compressed_size: usize,
    /// Bytes of the decompressed WASM.
    pub wasm_size: usize,
    /// ABI-encoded constructor arguments (empty without a constructor).
    pub constructor_args: Bytes,
    /// The StylusDeployer transaction that created the contract.
    pub deploy_tx: B256,
    /// The block that included `deploy_tx`.
    pub deploy_block: u64,
    /// The transaction that activated the code: the deploy transaction itself, or `None` when
    /// the same code was already active on the chain.
    pub activation_tx: Option<B256>,
    /// The block that included `activation_tx`, if any.
    pub activation_block: Option<u64>,
    /// The contract's full JSON ABI (functions, events, errors).
    pub abi: serde_json::Value,
}

/// One wiring transaction sent after the contracts were deployed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WiringRecord {
    /// The call made, e.g. `sessionGateway.bind(0x…)`; identifies the step across runs.
    pub description: String,
    /// The transaction's hash.
    pub tx: B256,
    /// The block that included it.
    pub block: u64,
}

/// Reading or writing a record failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The file (or its directory) could not be read, created, written or renamed.
    #[error("{path}: {reason}")]
    Io {
        /// The record file.
        path: PathBuf,
        /// The I/O error.
        reason: String,
    },
    /// The file exists but does not parse as a deployment record.
    #[error("{path} is not a deployment record: {reason}")]
    Format {
        /// The record file.
        path: PathBuf,
        /// The JSON error.
        reason: String,
    },
    /// The record has no address for a contract the services need (its key).
    #[error("the deployment record has no {0}")]
    Missing(&'static str),
}

/// A deployment's Bursar contracts by role, as every consumer of a record takes them
/// ([`DeploymentRecord::contracts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deployed {
    /// The SessionWallet.
    pub session_wallet: Address,
    /// The SessionGateway.
    pub session_gateway: Address,
    /// The CounterpartyRegistry.
    pub counterparty_registry: Address,
    /// The ReceiptRegistry.
    pub receipt_registry: Address,
    /// The TestToken, on networks that deploy one.
    pub test_token: Option<Address>,
    /// USDC, where the chain has it (see [`DeploymentRecord::evm`]).
    pub usdc: Option<Address>,
    /// The ERC-8004 Identity Registry, where the chain has it.
    pub identity_registry: Option<Address>,
    /// The ERC-8004 Reputation Registry, where the chain has it.
    pub reputation_registry: Option<Address>,
    /// The first block any of them was deployed in: where following their events starts.
    pub first_block: u64,
}

impl Deployed {
    /// The four Bursar contracts: the wallet, the gateway, the counterparty and receipt
    /// registries.
    pub fn bursar(&self) -> [Address; 4] {
        [
            self.session_wallet,
            self.session_gateway,
            self.counterparty_registry,
            self.receipt_registry,
        ]
    }

    /// The ERC-8004 Identity and Reputation registries, where the chain has them.
    pub fn agent_registries(&self) -> [Option<Address>; 2] {
        [self.identity_registry, self.reputation_registry]
    }
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

    /// The four contracts every network has (the test token where there is one), or the
    /// first one missing.
    pub fn contracts(&self) -> Result<Deployed, RecordError> {
        use crate::contract::Contract;
        let get = |c: Contract| self.address(c.key()).ok_or(RecordError::Missing(c.key()));
        Ok(Deployed {
            session_wallet: get(Contract::SessionWallet)?,
            session_gateway: get(Contract::SessionGateway)?,
            counterparty_registry: get(Contract::CounterpartyRegistry)?,
            receipt_registry: get(Contract::ReceiptRegistry)?,
            test_token: self.address(Contract::TestToken.key()),
            usdc: self.evm.get("usdc").map(|c| c.address),
            identity_registry: self.evm.get("identityRegistry").map(|c| c.address),
            reputation_registry: self.evm.get("reputationRegistry").map(|c| c.address),
            first_block: self
                .contracts
                .values()
                .map(|c| c.deploy_block)
                .min()
                .unwrap_or(0),
        })
    }

    /// The address of `contract` (its key, e.g. `sessionWallet`), if recorded.
    pub fn address(&self, contract: &str) -> Option<Address> {
        self.contracts.get(contract).map(|c| c.address)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Contract;

    fn contract(byte: u8, block: u64) -> ContractRecord {
        ContractRecord {
            address: Address::repeat_byte(byte),
            code_hash: B256::ZERO,
            compressed_size: 0,
            wasm_size: 0,
            constructor_args: Bytes::new(),
            deploy_tx: B256::ZERO,
            deploy_block: block,
            activation_tx: None,
            activation_block: None,
            abi: serde_json::Value::Null,
        }
    }

    fn record(contracts: &[(Contract, u8, u64)]) -> DeploymentRecord {
        DeploymentRecord {
            format: FORMAT,
            network: "devnet".into(),
            chain_id: 412_346,
            deployer: Address::ZERO,
            stylus_deployer: Address::ZERO,
            git_commit: None,
            toolchain: Toolchain::default(),
            contracts: contracts
                .iter()
                .map(|(c, byte, block)| (c.key().to_owned(), contract(*byte, *block)))
                .collect(),
            wiring: Vec::new(),
            evm: BTreeMap::new(),
        }
    }

    #[test]
    fn contracts_by_role_or_the_first_missing() {
        let four = [
            (Contract::SessionWallet, 1, 9),
            (Contract::SessionGateway, 2, 10),
            (Contract::CounterpartyRegistry, 3, 7),
            (Contract::ReceiptRegistry, 4, 8),
        ];
        let d = record(&four).contracts().unwrap();
        assert_eq!(d.session_wallet, Address::repeat_byte(1));
        assert_eq!(d.session_gateway, Address::repeat_byte(2));
        assert_eq!(d.counterparty_registry, Address::repeat_byte(3));
        assert_eq!(d.receipt_registry, Address::repeat_byte(4));
        assert_eq!((d.test_token, d.first_block), (None, 7));
        let mut five = four.to_vec();
        five.push((Contract::TestToken, 5, 3));
        let d = record(&five).contracts().unwrap();
        assert_eq!(
            (d.test_token, d.first_block),
            (Some(Address::repeat_byte(5)), 3)
        );
        assert_eq!(d.usdc, None);
        let mut with_usdc = record(&five);
        let usdc = EvmContractRecord {
            address: evm::USDC,
            code_hash: B256::repeat_byte(9),
        };
        with_usdc.evm.insert("usdc".into(), usdc);
        assert_eq!(with_usdc.contracts().unwrap().usdc, Some(evm::USDC));
        // An empty section is not written, and records without one read as finding none.
        let old = serde_json::to_value(record(&five)).unwrap();
        assert!(old.get("evm").is_none(), "{old}");
        let old: DeploymentRecord = serde_json::from_value(old).unwrap();
        assert!(old.evm.is_empty());
        let e = record(&four[1..]).contracts().unwrap_err();
        assert_eq!(e.to_string(), "the deployment record has no sessionWallet");
    }
}
