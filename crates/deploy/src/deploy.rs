//! The deployment itself: each contract deployed, activated and constructed in one
//! StylusDeployer transaction, then wired; idempotent against the network's previous record.

use std::path::PathBuf;

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use alloy_sol_types::{SolCall, SolError, SolEvent, SolValue};
use bursar_bindings::arbitrum::{
    IArbWasm, IStylusDeployer, ARBWASM_ADDRESS, STYLUS_DEPLOYER_ADDRESS,
};
use bursar_bindings::{
    counterparty::ICounterpartyRegistry, gateway::ISessionGateway, receipts::IReceiptRegistry,
};
use serde_json::json;

use crate::artifacts::{Artifact, ArtifactError, BuildInfo};
use crate::contract::Contract;
use crate::network::Network;
use crate::record::{
    ContractRecord, DeploymentRecord, EvmContractRecord, RecordError, Toolchain, WiringRecord,
    EVM_CONTRACTS, FORMAT,
};
use bursar_client::revert;
use bursar_client::rpc::{Client, Receipt, RpcError};
use bursar_client::sender::{SendError, Sender};
use bursar_client::Key;

/// `stylus_constructor()`'s selector: the same whatever the constructor's arguments.
pub const CONSTRUCTOR_SELECTOR: [u8; 4] = [0x55, 0x85, 0x25, 0x8d];

/// Why a deployment stopped. Earlier contracts stay deployed and recorded; re-running
/// continues where it stopped.
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    /// A JSON-RPC request failed.
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// The RPC endpoint serves a different chain than the named network.
    #[error("network {network} has chain id {expected}, but the RPC endpoint reports {actual}")]
    WrongChain {
        /// The network's name.
        network: String,
        /// The chain id the network must have.
        expected: u64,
        /// The chain id the RPC endpoint reported.
        actual: u64,
    },
    /// A contract artifact is missing or would not activate.
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
    /// The chain has no code at the canonical StylusDeployer address.
    #[error("no StylusDeployer at {STYLUS_DEPLOYER_ADDRESS} on chain {chain_id}: is this a Stylus chain?")]
    NoStylusDeployer {
        /// The chain id the RPC endpoint reported.
        chain_id: u64,
    },
    /// The deployer cannot pay for what is left to deploy; checked before anything is sent.
    #[error("deployer {address} has {have} wei but the deployment needs about {need} wei")]
    InsufficientBalance {
        /// The deployer's address.
        address: Address,
        /// Its balance, in wei.
        have: U256,
        /// The estimated upper bound of gas and activation fees, in wei.
        need: U256,
    },
    /// Simulating activation showed the chain would refuse the program.
    #[error("{contract}: activation would fail: {reason}")]
    Activation {
        /// The artifact stem.
        contract: &'static str,
        /// ArbWasm's error (decoded) or the node's message.
        reason: String,
    },
    /// The StylusDeployer transaction would revert, reverted or logged no new contract.
    #[error("{contract}: deployment failed: {reason}")]
    Deploy {
        /// The artifact stem.
        contract: &'static str,
        /// What went wrong, with revert data decoded.
        reason: String,
    },
    /// Binding a contract to the wallet failed.
    #[error("wiring ({step}) failed: {reason}")]
    Wiring {
        /// The artifact stem of the contract being bound.
        step: &'static str,
        /// What went wrong: bound to another wallet, or the send failure.
        reason: String,
    },
    /// The deployment record could not be read or written.
    #[error(transparent)]
    Record(#[from] RecordError),
}

/// What a deployment reports as it goes.
#[derive(Clone, Debug)]
pub enum Progress {
    /// The RPC endpoint answered and serves the expected chain.
    Connected {
        /// The chain id it reported.
        chain_id: u64,
        /// Its latest block number.
        block: u64,
    },
    /// The account that will send the transactions.
    Deployer {
        /// The deployer's address.
        address: Address,
        /// Its balance, in wei.
        balance: U256,
    },
    /// `index` of `total` (1-based): already deployed with this code and arguments.
    Reused {
        /// Position in the deployment order, 1-based.
        index: usize,
        /// How many contracts this network gets.
        total: usize,
        /// The contract kept.
        contract: Contract,
        /// Where it already is.
        address: Address,
    },
    /// `index` of `total` (1-based): its deployment transaction is about to be sent.
    Deploying {
        /// Position in the deployment order, 1-based.
        index: usize,
        /// How many contracts this network gets.
        total: usize,
        /// The contract being deployed.
        contract: Contract,
        /// Bytes of its on-chain (compressed) code.
        size: usize,
    },
    /// `index` of `total` (1-based): deployed, activated and constructed.
    Deployed {
        /// Position in the deployment order, 1-based.
        index: usize,
        /// How many contracts this network gets.
        total: usize,
        /// The contract deployed.
        contract: Contract,
        /// Its entry in the deployment record.
        record: ContractRecord,
    },
    /// A contract is bound to the wallet.
    Wired {
        /// The call, e.g. `sessionGateway.bind(0x…)`.
        description: String,
        /// The binding transaction; `None` when an earlier run had already bound it.
        tx: Option<B256>,
    },
    /// The deployment record was written; the deployment is complete.
    Written {
        /// Where (`deployments/<network>.json`).
        path: PathBuf,
    },
}

/// What to deploy where.
#[derive(Clone, Debug)]
pub struct DeployOptions {
    /// The network to deploy to: its expected chain id and whether the test token goes there.
    pub network: Network,
    /// Where `<stem>.code` and `sizes.json` are (`target/contracts`).
    pub artifacts_dir: PathBuf,
    /// `deployments/<network>.json`: read for idempotency, written at the end.
    pub record_path: PathBuf,
    /// The source tree's commit (`git rev-parse HEAD`), to record; `None` when unknown.
    pub git_commit: Option<String>,
}

/// Gas a deployment of `code` needs at most, for the balance check before sending anything:
/// code deposit, calldata, activation, constructor and slack.
fn gas_bound(code_len: usize) -> u64 {
    let len = code_len as u64;
    21_000 + len * 200 + len * 16 + 1_659_168 + 3_000_000
}

/// Deploys what is missing and wires it; returns the record (also written to
/// `options.record_path`).
pub async fn deploy(
    client: &Client,
    key: Key,
    options: &DeployOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<DeploymentRecord, DeployError> {
    let chain_id = client.chain_id().await?;
    if let Some(expected) = options.network.chain_id {
        if expected != chain_id {
            return Err(DeployError::WrongChain {
                network: options.network.name.clone(),
                expected,
                actual: chain_id,
            });
        }
    }
    progress(Progress::Connected {
        chain_id,
        block: client.block_number().await?,
    });

    let contracts: Vec<Contract> = Contract::ALL
        .into_iter()
        .filter(|c| *c != Contract::TestToken || options.network.test_token)
        .collect();
    let artifacts = contracts
        .iter()
        .map(|c| Artifact::load(&options.artifacts_dir, c.artifact()))
        .collect::<Result<Vec<_>, _>>()?;
    if client.code(STYLUS_DEPLOYER_ADDRESS).await?.is_empty() {
        return Err(DeployError::NoStylusDeployer { chain_id });
    }

    let deployer = key.address();
    let balance = client.balance(deployer).await?;
    progress(Progress::Deployer {
        address: deployer,
        balance,
    });

    let previous = DeploymentRecord::read(&options.record_path)?
        .filter(|r| r.chain_id == chain_id && r.deployer == deployer);
    let build = BuildInfo::load(&options.artifacts_dir);
    // Before any transaction: a failing lookup then costs nothing.
    let evm = evm_contracts(client).await?;
    // The ReceiptRegistry gives ERC-8004 feedback where the chain has the registries.
    let agent = |key: &str| evm.get(key).map(|c| c.address).unwrap_or_default();
    let agents = (agent("identityRegistry"), agent("reputationRegistry"));
    let mut record = DeploymentRecord {
        format: FORMAT,
        network: options.network.name.clone(),
        chain_id,
        deployer,
        stylus_deployer: STYLUS_DEPLOYER_ADDRESS,
        git_commit: options.git_commit.clone(),
        toolchain: Toolchain {
            rustc: build.toolchain,
            wasm_opt: build.wasm_opt,
            stylus_sdk: STYLUS_SDK_VERSION.to_string(),
        },
        // Entries not yet (re)processed stay as they were, so a record written after a
        // failure still describes everything on chain.
        contracts: previous
            .as_ref()
            .map(|p| p.contracts.clone())
            .unwrap_or_default(),
        wiring: vec![],
        evm,
    };

    // Which contracts can stay: same code, same constructor arguments, code on chain and
    // active. The gateway and both registries are bound to exactly one wallet, once, so the
    // four are kept or replaced together (the token and the extension are bound to nothing).
    let mut reuse = Vec::with_capacity(contracts.len());
    let mut planned: Vec<(Address, Bytes)> = Vec::new();
    for (contract, artifact) in contracts.iter().zip(&artifacts) {
        let args = constructor_args(*contract, deployer, &contracts, &planned, agents);
        let kept = match previous
            .as_ref()
            .and_then(|p| p.contracts.get(contract.key()))
        {
            Some(old) if old.code_hash == artifact.code_hash && old.constructor_args == args => {
                is_live(client, old.address, artifact.code_hash).await?
            }
            _ => false,
        };
        let address = if kept {
            previous.as_ref().unwrap().contracts[contract.key()].address
        } else {
            Address::ZERO
        };
        reuse.push(kept);
        planned.push((address, args));
    }
    let bound_together: Vec<usize> = contracts
        .iter()
        .enumerate()
        .filter(|(_, c)| !matches!(c, Contract::TestToken | Contract::SessionWalletExtension))
        .map(|(i, _)| i)
        .collect();
    let keep_all = bound_together.iter().all(|i| reuse[*i]);
    for i in bound_together {
        reuse[i] = keep_all;
    }

    // Check the balance covers everything still to deploy before sending anything.
    let mut sender = Sender::new(client, key).await?;
    let max_fee = client.fees().await?.max_fee_per_gas;
    let mut need = U256::ZERO;
    let mut fees = Vec::with_capacity(contracts.len());
    for ((contract, artifact), kept) in contracts.iter().zip(&artifacts).zip(&reuse) {
        let fee = if *kept {
            U256::ZERO
        } else {
            activation_fee(client, deployer, contract.artifact(), &artifact.code).await?
        };
        if !kept {
            need += U256::from(gas_bound(artifact.code.len())) * U256::from(max_fee) + fee;
        }
        fees.push(fee);
    }
    if balance < need {
        return Err(DeployError::InsufficientBalance {
            address: deployer,
            have: balance,
            need,
        });
    }

    let total = contracts.len();
    let mut addresses: Vec<(Address, Bytes)> = Vec::with_capacity(total);
    for (i, (contract, artifact)) in contracts.iter().zip(&artifacts).enumerate() {
        let args = constructor_args(*contract, deployer, &contracts, &addresses, agents);
        let entry = if reuse[i] {
            let old = previous.as_ref().unwrap().contracts[contract.key()].clone();
            progress(Progress::Reused {
                index: i + 1,
                total,
                contract: *contract,
                address: old.address,
            });
            old
        } else {
            progress(Progress::Deploying {
                index: i + 1,
                total,
                contract: *contract,
                size: artifact.code.len(),
            });
            let entry = deploy_one(
                client,
                &mut sender,
                *contract,
                artifact,
                args.clone(),
                fees[i],
            )
            .await?;
            progress(Progress::Deployed {
                index: i + 1,
                total,
                contract: *contract,
                record: entry.clone(),
            });
            entry
        };
        addresses.push((entry.address, args));
        record.contracts.insert(contract.key().to_string(), entry);
        // Record progress as it happens, so a re-run after a failure continues from here.
        record.write(&options.record_path)?;
    }

    record
        .contracts
        .retain(|key, _| contracts.iter().any(|c| c.key() == key));
    let earlier_wiring = previous.map(|p| p.wiring).unwrap_or_default();
    wire(client, &mut sender, &mut record, &earlier_wiring, progress).await?;
    record.write(&options.record_path)?;
    progress(Progress::Written {
        path: options.record_path.clone(),
    });
    Ok(record)
}

/// The stylus-sdk the contracts are built with (recorded for auditors).
pub const STYLUS_SDK_VERSION: &str = "0.10.10";

/// The ABI-encoded constructor arguments of `contract`, given the addresses decided so far
/// (`decided[i]` belongs to `contracts[i]`) and the chain's ERC-8004 Identity and Reputation
/// registries (zero where it has none).
fn constructor_args(
    contract: Contract,
    deployer: Address,
    contracts: &[Contract],
    decided: &[(Address, Bytes)],
    (identity, reputation): (Address, Address),
) -> Bytes {
    let at = |c: Contract| {
        contracts
            .iter()
            .position(|x| *x == c)
            .and_then(|i| decided.get(i))
            .map(|(a, _)| *a)
            .unwrap_or_default()
    };
    match contract {
        // The token's owner; the binder of the gateway and the registries.
        Contract::TestToken | Contract::CounterpartyRegistry | Contract::SessionGateway => {
            deployer.abi_encode().into()
        }
        Contract::ReceiptRegistry => (deployer, identity, reputation).abi_encode_params().into(),
        Contract::SessionWalletExtension => Bytes::new(),
        Contract::SessionWallet => (
            at(Contract::CounterpartyRegistry),
            at(Contract::ReceiptRegistry),
            at(Contract::SessionGateway),
            at(Contract::SessionWalletExtension),
        )
            .abi_encode_params()
            .into(),
    }
}

/// Whether `address` holds code with `code_hash` that is active at the current Stylus version.
async fn is_live(client: &Client, address: Address, code_hash: B256) -> Result<bool, RpcError> {
    let code = client.code(address).await?;
    if code.is_empty() || keccak256(&code) != code_hash {
        return Ok(false);
    }
    let query = IArbWasm::codehashVersionCall {
        codehash: code_hash,
    };
    match client
        .call(None, ARBWASM_ADDRESS, &query.abi_encode(), U256::ZERO, None)
        .await
    {
        Ok(_) => Ok(true),
        Err(e) if e.revert_data().is_some() => Ok(false),
        Err(e) => Err(e),
    }
}

/// The activation data fee for `code`, found by simulating `activateProgram` on a probe
/// address holding the code (state override), as cargo-stylus does. Also surfaces, before
/// anything is spent, the reason activation would fail (ArbWasm's error, decoded).
pub async fn activation_fee(
    client: &Client,
    from: Address,
    contract: &'static str,
    code: &[u8],
) -> Result<U256, DeployError> {
    let probe = Address::from_slice(&keccak256(b"bursar.deploy.activation-probe")[12..]);
    let overrides = json!({ probe.to_string(): { "code": Bytes::copy_from_slice(code) } });
    let call = IArbWasm::activateProgramCall { program: probe };
    match client
        .call(
            Some(from),
            ARBWASM_ADDRESS,
            &call.abi_encode(),
            U256::ZERO,
            Some(overrides),
        )
        .await
    {
        Ok(out) => Ok(IArbWasm::activateProgramCall::abi_decode_returns(&out)
            .map(|r| r.dataFee)
            .unwrap_or_default()),
        Err(e) => {
            let Some(data) = e.revert_data() else {
                return match e {
                    RpcError::Node { message, .. } => Err(DeployError::Activation {
                        contract,
                        reason: format!("the chain refused the program: {message}"),
                    }),
                    other => Err(other.into()),
                };
            };
            if let Ok(short) = IArbWasm::ProgramInsufficientValue::abi_decode(data) {
                return Ok(short.want);
            }
            if IArbWasm::ProgramUpToDate::abi_decode(data).is_ok() {
                return Ok(U256::ZERO);
            }
            Err(DeployError::Activation {
                contract,
                reason: revert::describe(data),
            })
        }
    }
}

/// One `StylusDeployer.deploy` transaction: create, activate if needed, construct.
async fn deploy_one(
    client: &Client,
    sender: &mut Sender,
    contract: Contract,
    artifact: &Artifact,
    args: Bytes,
    data_fee: U256,
) -> Result<ContractRecord, DeployError> {
    let failed = |reason: String| DeployError::Deploy {
        contract: contract.artifact(),
        reason,
    };
    let init_data: Bytes = match contract.has_constructor() {
        true => [&CONSTRUCTOR_SELECTOR[..], &args[..]].concat().into(),
        false => Bytes::new(),
    };
    let call = IStylusDeployer::deployCall {
        bytecode: artifact.initcode().into(),
        initData: init_data,
        initValue: U256::ZERO,
        salt: B256::ZERO,
    };
    // The fee moves with demand between estimate and inclusion; the deployer refunds excess.
    let value = data_fee + data_fee / U256::from(5);
    let receipt = sender
        .send(
            client,
            Some(STYLUS_DEPLOYER_ADDRESS),
            call.abi_encode(),
            value,
        )
        .await
        .map_err(|e| failed(send_reason(&e)))?;
    let address = receipt
        .logs
        .iter()
        .filter(|l| l.address == STYLUS_DEPLOYER_ADDRESS)
        .find_map(|l| {
            IStylusDeployer::ContractDeployed::decode_raw_log(l.topics.iter().copied(), &l.data)
                .ok()
        })
        .map(|e| e.deployedContract)
        .ok_or_else(|| {
            failed(format!(
                "no ContractDeployed log in {}",
                receipt.transaction_hash
            ))
        })?;
    let activated = receipt.logs.iter().any(|l| {
        l.address == ARBWASM_ADDRESS
            && l.topics.first() == Some(&IArbWasm::ProgramActivated::SIGNATURE_HASH)
    });
    Ok(ContractRecord {
        address,
        code_hash: artifact.code_hash,
        compressed_size: artifact.code.len(),
        wasm_size: artifact.wasm_size,
        constructor_args: args,
        deploy_tx: receipt.transaction_hash,
        deploy_block: receipt.block(),
        activation_tx: activated.then_some(receipt.transaction_hash),
        activation_block: activated.then(|| receipt.block()),
        abi: serde_json::from_str(contract.abi_json()).expect("committed ABIs are JSON"),
    })
}

/// A send failure as a sentence, with revert data decoded.
fn send_reason(e: &SendError) -> String {
    match e {
        SendError::WouldRevert { data } => format!("would revert: {}", revert::describe(data)),
        other => other.to_string(),
    }
}

/// Binds the gateway and both registries to the wallet (`bind(wallet)`, which each accepts
/// once, from the deployer named in its constructor), skipping those already bound to it.
async fn wire(
    client: &Client,
    sender: &mut Sender,
    record: &mut DeploymentRecord,
    earlier: &[WiringRecord],
    progress: &mut dyn FnMut(Progress),
) -> Result<(), DeployError> {
    let Some(wallet) = record.address(Contract::SessionWallet.key()) else {
        return Ok(());
    };
    for contract in [
        Contract::SessionGateway,
        Contract::ReceiptRegistry,
        Contract::CounterpartyRegistry,
    ] {
        let Some(at) = record.address(contract.key()) else {
            continue;
        };
        // The three declare `wallet()` and `bind(address)` each in its own interface.
        let (current, bind) = match contract {
            Contract::SessionGateway => (
                view(client, at, ISessionGateway::walletCall {}).await?,
                ISessionGateway::bindCall { wallet }.abi_encode(),
            ),
            Contract::ReceiptRegistry => (
                view(client, at, IReceiptRegistry::walletCall {}).await?,
                IReceiptRegistry::bindCall { wallet }.abi_encode(),
            ),
            _ => (
                view(client, at, ICounterpartyRegistry::walletCall {}).await?,
                ICounterpartyRegistry::bindCall { wallet }.abi_encode(),
            ),
        };
        let description = format!("{}.bind({wallet})", contract.key());
        if current == wallet {
            // Bound by an earlier run, whose record we keep.
            record.wiring.extend(
                earlier
                    .iter()
                    .filter(|w| w.description == description)
                    .cloned(),
            );
            progress(Progress::Wired {
                description,
                tx: None,
            });
            continue;
        }
        let step = contract.artifact();
        if !current.is_zero() {
            return Err(DeployError::Wiring {
                step,
                reason: format!("already bound to another wallet, {current}"),
            });
        }
        let receipt: Receipt = sender
            .send(client, Some(at), bind, U256::ZERO)
            .await
            .map_err(|e| DeployError::Wiring {
                step,
                reason: send_reason(&e),
            })?;
        record.wiring.push(WiringRecord {
            description: description.clone(),
            tx: receipt.transaction_hash,
            block: receipt.block(),
        });
        progress(Progress::Wired {
            description,
            tx: Some(receipt.transaction_hash),
        });
    }
    Ok(())
}

/// Calls a view and decodes its single return value.
async fn view<C: SolCall>(client: &Client, to: Address, call: C) -> Result<C::Return, DeployError> {
    let out = client
        .call(None, to, &call.abi_encode(), U256::ZERO, None)
        .await?;
    C::abi_decode_returns(&out).map_err(|e| {
        DeployError::Rpc(RpcError::BadResponse {
            method: "eth_call",
            url: client.display_url(),
            reason: format!("{}: {e}", C::SIGNATURE),
        })
    })
}

/// The EVM contracts of [`EVM_CONTRACTS`] that have code on the chain.
async fn evm_contracts(
    client: &Client,
) -> Result<std::collections::BTreeMap<String, EvmContractRecord>, DeployError> {
    let mut found = std::collections::BTreeMap::new();
    for (key, address) in EVM_CONTRACTS {
        let code = client.code(*address).await?;
        if !code.is_empty() {
            let record = EvmContractRecord {
                address: *address,
                code_hash: alloy_primitives::keccak256(&code),
            };
            found.insert(key.to_string(), record);
        }
    }
    Ok(found)
}
