//! `bursar deploy`: deploys, activates and wires the contracts on a network and writes
//! `deployments/<network>.json` (see [`bursar_deploy`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use bursar_client::key::{KeyError, KEYSTORE_PASSWORD_ENV};
use bursar_client::{Client, Key};
use bursar_deploy::{DeployOptions, Network, Progress};

#[derive(clap::Args, Debug)]
pub(crate) struct DeployArgs {
    /// JSON-RPC endpoint of the chain.
    #[arg(long, env = "BURSAR_RPC_URL", default_value = "http://127.0.0.1:8547")]
    rpc: String,
    /// Network name: devnet, arbitrum-sepolia, arbitrum-one, or a custom name (an Orbit chain);
    /// known names must match the RPC's chain id. Names deployments/<network>.json.
    #[arg(long, env = "BURSAR_NETWORK", default_value = "devnet")]
    network: String,
    /// File holding the deployer's hex private key. Alternatives: --keystore, or the
    /// BURSAR_DEPLOYER_KEY environment variable; on the devnet, the first dev account.
    #[arg(long, value_name = "FILE", conflicts_with = "keystore")]
    key_file: Option<PathBuf>,
    /// Encrypted JSON keystore (geth/foundry format) holding the deployer's key.
    #[arg(long, value_name = "FILE")]
    keystore: Option<PathBuf>,
    /// File holding the keystore's password (else BURSAR_KEYSTORE_PASSWORD).
    #[arg(long, value_name = "FILE", requires = "keystore")]
    password_file: Option<PathBuf>,
    /// Directory of the built contracts (<name>.code, sizes.json): by default
    /// `target/contracts` when a build is there, else the committed `contracts/artifacts`.
    #[arg(long)]
    artifacts: Option<PathBuf>,
    /// Build the contracts first (`cargo xtask build-contracts`; needs the source tree).
    #[arg(long)]
    build: bool,
    /// Directory of the deployment records.
    #[arg(long, default_value = "deployments")]
    deployments: PathBuf,
}

pub(crate) fn run(args: DeployArgs) -> Result<(), String> {
    let network = Network::named(&args.network).map_err(|e| e.to_string())?;
    let key = load_key(&args, &network).map_err(|e| e.to_string())?;
    if args.build {
        build_contracts()?;
    }
    let options = DeployOptions {
        record_path: args.deployments.join(format!("{}.json", network.name)),
        network,
        artifacts_dir: crate::support::artifacts(args.artifacts.as_deref()),
        git_commit: git_commit(Path::new(".")),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let client = Client::new(args.rpc.clone());
    let record = rt
        .block_on(bursar_deploy::deploy(
            &client,
            key,
            &options,
            &mut print_progress,
        ))
        .map_err(|e| e.to_string())?;
    println!();
    for (name, c) in &record.contracts {
        println!("{name:<22} {}  code {}", c.address, c.code_hash);
    }
    Ok(())
}

/// The deployer's key: --key-file, --keystore, $BURSAR_DEPLOYER_KEY, or (devnet only) the
/// first dev account.
fn load_key(args: &DeployArgs, network: &Network) -> Result<Key, KeyError> {
    if let Some(path) = &args.key_file {
        return Key::from_key_file(path);
    }
    if let Some(path) = &args.keystore {
        let password = match &args.password_file {
            Some(file) => std::fs::read_to_string(file)
                .map_err(|e| KeyError::Read {
                    path: file.clone(),
                    reason: e.to_string(),
                })?
                .trim_end_matches(['\r', '\n'])
                .to_string(),
            None => std::env::var(KEYSTORE_PASSWORD_ENV)
                .map_err(|_| KeyError::NoPassword { path: path.clone() })?,
        };
        return Key::from_keystore(path, &password);
    }
    if let Some(key) = Key::from_env()? {
        return Ok(key);
    }
    if network.dev {
        let dev = &bursar_devnet::accounts::dev_accounts()[0];
        return Ok(Key::from_bytes(&dev.private_key).expect("dev keys are valid"));
    }
    Err(KeyError::NoKey {
        network: network.name.clone(),
    })
}

fn build_contracts() -> Result<(), String> {
    let status = Command::new("cargo")
        .args(["xtask", "build-contracts"])
        .status()
        .map_err(|e| format!("cannot run `cargo xtask build-contracts`: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err("`cargo xtask build-contracts` failed".into())
    }
}

/// `git rev-parse HEAD` in `dir`, if it is a git checkout.
pub(crate) fn git_commit(dir: &Path) -> Option<String> {
    let out = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(dir)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Progress lines on stderr, one per step.
pub(crate) fn print_progress(p: Progress) {
    match p {
        Progress::Connected { chain_id, block } => {
            eprintln!("connected: chain {chain_id}, block {block}")
        }
        Progress::Deployer { address, balance } => {
            eprintln!("deployer {address}, balance {balance} wei")
        }
        Progress::Reused {
            index,
            total,
            contract,
            address,
        } => eprintln!(
            "[{index}/{total}] {:<22} already deployed at {address} (same code and arguments)",
            contract.key()
        ),
        Progress::Deploying {
            index,
            total,
            contract,
            size,
        } => eprintln!(
            "[{index}/{total}] {:<22} deploying {size} bytes …",
            contract.key()
        ),
        Progress::Deployed {
            index,
            total,
            contract,
            record,
        } => eprintln!(
            "[{index}/{total}] {:<22} {} (tx {}, block {}{})",
            contract.key(),
            record.address,
            record.deploy_tx,
            record.deploy_block,
            if record.activation_tx.is_some() {
                ", activated"
            } else {
                ", code already active"
            }
        ),
        Progress::Wired { description, tx } => match tx {
            Some(tx) => eprintln!("wired: {description} (tx {tx})"),
            None => eprintln!("wired: {description} (already)"),
        },
        Progress::Written { path } => eprintln!("wrote {}", path.display()),
    }
}
