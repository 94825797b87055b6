//! The Bursar contracts' exported Solidity interfaces.
//!
//! Every contract's interface, as the Stylus SDK exports it (`export-abi`), is committed under
//! `contracts/abi/solidity/`. This crate
//!
//! * lists the contracts ([`CONTRACTS`]),
//! * exports each interface in-process ([`Contract::export`], [`export()`]) — the same text the
//!   contract's `<crate>-abi` binary prints (IdentityRegistry's with its struct parameter named:
//!   [`export::identity_registry`]),
//! * compiles the committed interfaces with solc (solc-js from `tools/solc`, driven by
//!   foundry-compilers) into standard JSON ABI artifacts ([`compile()`]).
//!
//! Its tests fail when a contract's export differs from the committed file
//! (`tests/export_matches_committed.rs`) and when the `sol!` bindings (`bursar-bindings`)
//! disagree with the committed interfaces (`tests/bindings_match_export.rs`).
//!
//! [`bindings`] compiles the `sol!` bindings themselves (which, unlike the export, declare the
//! events) into the full JSON ABI committed under `contracts/abi/json/` — what deploy records
//! and indexers use; `tests/json_matches_bindings.rs` keeps it current.
//!
//! The binary `bursar-abi` rewrites the committed files (`export`, `json`) and writes the JSON
//! ABI of the exports (`compile --out target/contracts/abi`).

pub mod bindings;
pub mod compile;
pub mod export;

use std::path::{Path, PathBuf};

pub use compile::{compile, compile_abis, solc, Error, SOLC_INSTALL_HINT};
pub use export::{export, HEADER};

/// One Bursar contract whose interface is exported and committed.
#[derive(Clone, Copy, Debug)]
pub struct Contract {
    /// The contract's Cargo package (`session-wallet`).
    pub package: &'static str,
    /// The exported Solidity interface's name (`ISessionWallet`).
    pub interface: &'static str,
    /// The committed interface, relative to this crate's directory
    /// (`solidity/ISessionWallet.sol`).
    pub file: &'static str,
    /// The contract's `GenerateAbi` output (the interface without the license/pragma header).
    abi: fn() -> String,
}

impl Contract {
    /// The full export: the license/pragma header and the interface, exactly as the contract's
    /// `<crate>-abi` binary prints it.
    pub fn export(&self) -> String {
        format!("{HEADER}{}", (self.abi)())
    }

    /// Absolute path of the committed interface.
    pub fn committed_path(&self) -> PathBuf {
        crate_dir().join(self.file)
    }

    /// The committed interface's text.
    pub fn committed(&self) -> std::io::Result<String> {
        std::fs::read_to_string(self.committed_path())
    }
}

/// The contracts, by interface name. Every Stylus contract crate of the workspace belongs here
/// (see the note in this crate's Cargo.toml).
pub const CONTRACTS: [Contract; 7] = [
    Contract {
        package: "counterparty-registry",
        interface: "ICounterpartyRegistry",
        file: "solidity/ICounterpartyRegistry.sol",
        abi: export::abi::<counterparty_registry::CounterpartyRegistry>,
    },
    Contract {
        package: "identity-registry",
        interface: "IIdentityRegistry",
        file: "solidity/IIdentityRegistry.sol",
        abi: export::identity_registry,
    },
    Contract {
        package: "reputation-registry",
        interface: "IReputationRegistry",
        file: "solidity/IReputationRegistry.sol",
        abi: export::abi::<reputation_registry::ReputationRegistry>,
    },
    Contract {
        package: "receipt-registry",
        interface: "IReceiptRegistry",
        file: "solidity/IReceiptRegistry.sol",
        abi: export::abi::<receipt_registry::ReceiptRegistry>,
    },
    Contract {
        package: "session-gateway",
        interface: "ISessionGateway",
        file: "solidity/ISessionGateway.sol",
        abi: export::abi::<session_gateway::SessionGateway>,
    },
    Contract {
        package: "session-wallet",
        interface: "ISessionWallet",
        file: "solidity/ISessionWallet.sol",
        abi: export::abi::<session_wallet::SessionWallet>,
    },
    Contract {
        package: "test-token",
        interface: "ITestToken",
        file: "solidity/ITestToken.sol",
        abi: export::abi::<test_token::TestToken>,
    },
];

/// The contract whose interface is `interface` (`ISessionWallet`).
pub fn contract(interface: &str) -> Option<&'static Contract> {
    CONTRACTS.iter().find(|c| c.interface == interface)
}

/// This crate's directory (`contracts/abi`).
pub fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The repository (workspace) root.
pub fn repo_root() -> PathBuf {
    crate_dir()
        .parent()
        .and_then(Path::parent)
        .expect("contracts/abi lives two levels below the repository root")
        .to_path_buf()
}

/// The committed interfaces of all contracts.
pub fn committed_paths() -> Vec<PathBuf> {
    CONTRACTS.iter().map(Contract::committed_path).collect()
}
