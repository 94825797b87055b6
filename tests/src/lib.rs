//! The end-to-end harness: a devnet in-process on a free port, the contract artifacts (built
//! once per test run if missing), and a deployment through `bursar_deploy` — the code behind
//! `bursar deploy`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

use bursar_client::{Client, Key};
use bursar_deploy::{DeployOptions, DeploymentRecord, Network};
use bursar_devnet::{ChainConfig, Handle, RpcConfig};

/// The repository root.
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the repository")
}

/// Where the built contracts are: `$BURSAR_CONTRACTS_DIR`, else `target/contracts`, built
/// with `cargo xtask build-contracts` (once per test binary) when missing.
pub fn artifacts_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Ok(dir) = std::env::var("BURSAR_CONTRACTS_DIR") {
            return PathBuf::from(dir);
        }
        let dir = repo_root().join("target").join("contracts");
        let missing = bursar_deploy::Contract::ALL
            .iter()
            .any(|c| !dir.join(format!("{}.code", c.artifact())).exists());
        if missing {
            let status = Command::new(env!("CARGO"))
                .args(["xtask", "build-contracts"])
                .current_dir(repo_root())
                .status()
                .expect("run cargo xtask build-contracts");
            assert!(status.success(), "cargo xtask build-contracts failed");
        }
        dir
    })
}

/// The first dev account: the devnet's default deployer.
pub fn dev_key(i: usize) -> Key {
    Key::from_bytes(&bursar_devnet::accounts::dev_accounts()[i].private_key)
        .expect("dev keys are valid")
}

/// A fresh devnet and a client for it.
pub async fn devnet() -> (Handle, Client) {
    let handle = bursar_devnet::spawn(RpcConfig {
        addr: "127.0.0.1:0".parse().expect("socket address"),
        chain: ChainConfig::default(),
        block_time: None,
    })
    .await
    .expect("bind a free port");
    let client = Client::new(handle.url.clone());
    (handle, client)
}

/// A unique scratch directory under `target/e2e/` (kept for inspection after a failure).
pub fn scratch(name: &str) -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = repo_root()
        .join("target")
        .join("e2e")
        .join(format!("{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// Deploy options for the devnet with the record at `<dir>/devnet.json`.
pub fn devnet_options(dir: &Path) -> DeployOptions {
    DeployOptions {
        network: Network::named("devnet").expect("known network"),
        artifacts_dir: artifacts_dir().clone(),
        record_path: dir.join("devnet.json"),
        git_commit: None,
    }
}

/// Deploys everything to `client`'s chain with the first dev account.
pub async fn deploy(client: &Client, dir: &Path) -> DeploymentRecord {
    bursar_deploy::deploy(client, dev_key(0), &devnet_options(dir), &mut |_| {})
        .await
        .unwrap_or_else(|e| panic!("deploy: {e}"))
}
