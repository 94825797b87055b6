//! Shared test harness: the real contract artifacts and a thin typed layer over `Executor`.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy_primitives::{Address, Bytes, Signature, TxKind, U256};
use alloy_sol_types::{SolCall, SolEventInterface, SolInterface};
use bursar_devnet::accounts::dev_accounts;
use bursar_devnet::chain::MinedTx;
use bursar_devnet::{CallOutcome, Executor, Log, DEFAULT_CHAIN_ID};

/// JSON-RPC client helpers for the tests that go through the server.
pub(crate) mod rpc_client;
/// Solidity compiled with the repository's solc-js.
pub(crate) mod solc;

/// The contracts the tests deploy (artifact stem names).
pub(crate) const CONTRACTS: [&str; 6] = [
    "counterparty_registry",
    "receipt_registry",
    "session_gateway",
    "session_wallet",
    "session_wallet_extension",
    "test_token",
];

/// Selector of `stylus_constructor()`, fixed whatever the constructor's arguments.
pub(crate) const CONSTRUCTOR_SELECTOR: [u8; 4] = [0x55, 0x85, 0x25, 0x8d];

/// Gas limit of every test call (the default block gas limit).
pub(crate) const GAS: u64 = 30_000_000;

/// Where the artifacts are: `$BURSAR_CONTRACTS_DIR`, else `<workspace>/target/contracts`,
/// built with `cargo xtask build-contracts` (once per test run) if any is missing.
pub(crate) fn artifacts_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Ok(dir) = std::env::var("BURSAR_CONTRACTS_DIR") {
            return PathBuf::from(dir);
        }
        let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let dir = workspace.join("target").join("contracts");
        let missing = CONTRACTS.iter().any(|c| {
            !dir.join(format!("{c}.wasm")).exists() || !dir.join(format!("{c}.code")).exists()
        });
        if missing {
            let status = Command::new(env!("CARGO"))
                .args(["xtask", "build-contracts"])
                .current_dir(&workspace)
                .status()
                .expect("run cargo xtask build-contracts");
            assert!(status.success(), "cargo xtask build-contracts failed");
        }
        dir
    })
}

/// The on-chain code (`EFF00000 || brotli(wasm)`) of a contract.
pub(crate) fn code(name: &str) -> Vec<u8> {
    let path = artifacts_dir().join(format!("{name}.code"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// A test address whose low 8 bytes are `n` (big-endian), the rest zero.
pub(crate) fn addr(n: u64) -> Address {
    let mut a = [0u8; 20];
    a[12..].copy_from_slice(&n.to_be_bytes());
    Address::from(a)
}

/// A typed call result.
pub(crate) struct Called<R> {
    /// The raw outcome of the call.
    pub outcome: CallOutcome,
    /// The decoded return value, or the revert data if the call failed.
    pub value: Result<R, Bytes>,
}

/// An executor with helpers to deploy the artifacts and call them through the bindings.
pub(crate) struct Chain {
    /// The executor the helpers drive; tests reach into it directly too.
    pub exec: Executor,
}

impl Chain {
    /// A fresh executor with an empty world.
    pub(crate) fn new() -> Self {
        Chain {
            exec: Executor::new(),
        }
    }

    /// Installs and activates a contract's code at `at`.
    pub(crate) fn deploy(&mut self, name: &str, at: Address) {
        self.exec
            .deploy_program(at, &code(name))
            .unwrap_or_else(|e| panic!("activate {name}: {e}"));
    }

    /// Calls `stylus_constructor()` with abi-encoded `args` (as StylusDeployer does).
    pub(crate) fn construct(&mut self, deployer: Address, at: Address, args: &[u8]) -> CallOutcome {
        let mut data = CONSTRUCTOR_SELECTOR.to_vec();
        data.extend_from_slice(args);
        self.exec.call(deployer, at, U256::ZERO, &data, GAS, false)
    }

    /// Sends `call` from `from` to `to` with no value and decodes the result.
    pub(crate) fn send<C: SolCall>(
        &mut self,
        from: Address,
        to: Address,
        call: C,
    ) -> Called<C::Return> {
        self.send_value(from, to, U256::ZERO, call)
    }

    /// Sends `call` with `value` wei attached and decodes the result.
    pub(crate) fn send_value<C: SolCall>(
        &mut self,
        from: Address,
        to: Address,
        value: U256,
        call: C,
    ) -> Called<C::Return> {
        let outcome = self
            .exec
            .call(from, to, value, &call.abi_encode(), GAS, false);
        decode::<C>(outcome)
    }

    /// Runs `call` as a static call from the zero address; panics if it reverts.
    pub(crate) fn view<C: SolCall>(&mut self, to: Address, call: C) -> C::Return {
        let outcome = self
            .exec
            .call(Address::ZERO, to, U256::ZERO, &call.abi_encode(), GAS, true);
        decode::<C>(outcome)
            .value
            .unwrap_or_else(|e| panic!("view reverted: {e}"))
    }
}

impl<R> Called<R> {
    /// The revert data; panics if the call succeeded.
    pub(crate) fn reverted(self) -> Bytes {
        match self.value {
            Ok(_) => panic!("call succeeded, expected a revert"),
            Err(data) => data,
        }
    }

    /// The return value; panics with the outcome if the call failed.
    pub(crate) fn ok(self) -> R {
        match self.value {
            Ok(v) => v,
            Err(_) => panic!("call failed: {:?}", self.outcome),
        }
    }
}

fn decode<C: SolCall>(outcome: CallOutcome) -> Called<C::Return> {
    let value = if outcome.success {
        Ok(C::abi_decode_returns(&outcome.return_data)
            .unwrap_or_else(|e| panic!("decode {} returns: {e}", C::SIGNATURE)))
    } else {
        Err(outcome.return_data.clone())
    };
    Called { outcome, value }
}

/// Decodes revert data as one of `E`'s custom errors.
pub(crate) fn revert_as<E: SolInterface>(data: &Bytes) -> E {
    E::abi_decode(data).unwrap_or_else(|e| panic!("revert data {data} is not {}: {e}", E::NAME))
}

/// Decodes the logs emitted by `address` as events of `E` (others skipped).
pub(crate) fn events<E: SolEventInterface>(logs: &[Log], address: Address) -> Vec<E> {
    logs.iter()
        .filter(|l| l.address == address)
        .map(|l| {
            E::decode_raw_log(&l.topics, &l.data)
                .unwrap_or_else(|e| panic!("log of {address} is not {}: {e}", E::NAME))
        })
        .collect()
}

/// Signs a transaction from dev account `key` and sends it to an automining [`bursar_devnet::Chain`];
/// returns it mined, whatever its status.
pub(crate) fn send_signed(
    chain: &mut bursar_devnet::Chain,
    key: usize,
    to: Address,
    value: U256,
    data: Vec<u8>,
) -> MinedTx {
    let account = &dev_accounts()[key];
    let tx = TxEip1559 {
        chain_id: DEFAULT_CHAIN_ID,
        nonce: chain.pending_nonce(account.address),
        gas_limit: 29_000_000,
        max_fee_per_gas: 1_000_000_000,
        max_priority_fee_per_gas: 0,
        to: TxKind::Call(to),
        value,
        input: data.into(),
        ..Default::default()
    };
    let (sig, recid) = account
        .signing_key()
        .sign_prehash_recoverable(tx.signature_hash().as_slice())
        .unwrap();
    let sig = Signature::from_signature_and_parity(sig, recid.is_y_odd());
    let envelope: TxEnvelope = tx.into_signed(sig).into();
    let hash = chain.send_transaction(envelope).expect("valid transaction");
    chain.transaction(hash).expect("automined").as_ref().clone()
}
