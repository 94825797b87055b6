//! `bursar up`: the whole stack in one command, for real local use — the devnet (or `--rpc`),
//! the contracts deployed when the record is missing or stale, the indexer and the relayer,
//! and a host key made on first run. Everything is kept in a data directory, so a restart
//! continues where the last run stopped: the devnet's state file, the deployment record, the
//! relayer's and the indexer's SQLite databases, the master key, the host key and the indexer's
//! export signing key `indexer.key` (files of mode 0600). While it runs, `<data dir>/up.json` says where everything is (`bursar demo
//! --against-running` reads it). Ctrl-C or SIGTERM stops the relayer, the indexer and the
//! devnet in that order and saves the chain.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bursar_client::{Client, Key};
use bursar_deploy::{Contract, DeployOptions, DeploymentRecord, Network};
use bursar_devnet::{Chain, ChainConfig, RpcConfig};
use bursar_relayer::engine::submission::EngineConfig;
use bursar_relayer::engine::vault::MasterKey;
use bursar_relayer::store::Store;
use bursar_relayer::{hosts, Config, Settings};
use serde_json::json;

use crate::deploy::{git_commit, print_progress};

#[derive(clap::Args, Debug)]
pub(crate) struct UpArgs {
    /// Where the stack keeps its state (created if missing).
    #[arg(long, env = "BURSAR_DATA_DIR", default_value = ".bursar")]
    data_dir: PathBuf,
    /// Use this chain's JSON-RPC instead of starting a devnet (a non-dev chain needs
    /// --deployer-key-file when the contracts must be deployed, and --signer-key-file).
    #[arg(long, env = "BURSAR_RPC_URL")]
    rpc: Option<String>,
    /// The devnet's port (0: any free port).
    #[arg(long, env = "BURSAR_DEVNET_PORT", default_value_t = 8547)]
    devnet_port: u16,
    /// Where the relayer listens.
    #[arg(long, env = "BURSAR_RELAYER_LISTEN", default_value = "127.0.0.1:8549")]
    relayer_listen: SocketAddr,
    /// Where the indexer's API listens.
    #[arg(long, env = "BURSAR_INDEXER_LISTEN", default_value = "127.0.0.1:8548")]
    indexer_listen: SocketAddr,
    /// Directory of the built contracts (<name>.code, sizes.json): by default
    /// `target/contracts` when a build is there, else the committed `contracts/artifacts`.
    #[arg(long)]
    artifacts: Option<PathBuf>,
    /// The key that deploys the contracts (hex file); on the devnet, its first account.
    #[arg(long, value_name = "FILE")]
    deployer_key_file: Option<PathBuf>,
    /// The relayer's signer key (hex file); on the devnet, its last accounts (--dev-signers).
    #[arg(long, value_name = "FILE")]
    signer_key_file: Option<PathBuf>,
    /// On the devnet without --signer-key-file: how many of its accounts, the last first, the
    /// relayer sends with. Sessions are spread over them; each signer's payments of a moment
    /// go out in one batch transaction, and the signers' transactions in parallel.
    #[arg(long, env = "BURSAR_DEV_SIGNERS", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=8))]
    dev_signers: u16,
    /// Failed attempts before a webhook delivery is dead (replayable from the console).
    #[arg(long, env = "BURSAR_WEBHOOK_ATTEMPTS", default_value_t = Settings::default().webhook_attempts)]
    webhook_attempts: u32,
}

/// Where a running stack is, as `<data dir>/up.json` says.
pub(crate) const UP_FILE: &str = "up.json";

pub(crate) fn run(args: UpArgs) -> Result<(), String> {
    crate::support::block_on(up(args))
}

async fn up(args: UpArgs) -> Result<(), String> {
    let dir = &args.data_dir;
    std::fs::create_dir_all(dir).map_err(|e| format!("--data-dir {}: {e}", dir.display()))?;
    let up_file = dir.join(UP_FILE);
    if up_file.exists() {
        return Err(format!(
            "{} exists: another `bursar up` runs on this data directory (or one was killed; \
             delete the file if none runs)",
            up_file.display()
        ));
    }

    // 1. The chain.
    let state_file = dir.join("devnet-state.json");
    let devnet = match &args.rpc {
        Some(_) => None,
        None => Some(start_devnet(args.devnet_port, &state_file).await?),
    };
    let rpc = match (&args.rpc, &devnet) {
        (Some(url), _) => url.clone(),
        (None, Some(d)) => d.url.clone(),
        (None, None) => unreachable!("a devnet runs without --rpc"),
    };
    let client = Client::new(rpc.clone());
    let chain_id = client
        .chain_id()
        .await
        .map_err(|e| format!("cannot reach the chain at {rpc}: {e}"))?;
    let dev = chain_id == bursar_devnet::DEFAULT_CHAIN_ID;
    let stack = async {
        // 2. The contracts, unless the record's are on chain with the built code.
        println!(
            "▶ Contracts (deployed only if the record in {} is missing or stale)",
            dir.display()
        );
        let deployer = key_or_dev(
            args.deployer_key_file.as_deref(),
            dev,
            0,
            "--deployer-key-file",
        )?;
        let name = bursar_deploy::network::KNOWN
            .iter()
            .find(|k| k.1 == chain_id)
            .map_or("custom", |k| k.0);
        let network = Network::named(name).map_err(|e| e.to_string())?;
        let record = bursar_deploy::deploy(
            &client,
            deployer,
            &DeployOptions {
                record_path: dir.join("deployment.json"),
                network,
                artifacts_dir: crate::support::artifacts(args.artifacts.as_deref()),
                git_commit: git_commit(Path::new(".")),
            },
            &mut print_progress,
        )
        .await
        .map_err(|e| e.to_string())?;

        // 3. The indexer, signing exports with the same key from run to run.
        let (followed, start_block) = crate::support::followed(&record)?;
        let signing_key = bursar_indexer::audit::sign::load_or_create_key(&dir.join("indexer.key"))
            .map_err(|e| e.to_string())?;
        let indexer = bursar_indexer::start(bursar_indexer::Config {
            rpc: rpc.clone(),
            db: sqlite(&dir.join("indexer.db")),
            listen: args.indexer_listen,
            contracts: followed,
            follow: bursar_indexer::FollowConfig {
                start_block,
                poll: Duration::from_millis(200),
                ..bursar_indexer::FollowConfig::default()
            },
            signing_key,
        })
        .await
        .map_err(|e| format!("the indexer did not start: {e}"))?;

        // 4. The relayer, and a host key on first run.
        let signers = match (&args.signer_key_file, dev) {
            (None, true) => {
                let accounts = bursar_devnet::accounts::dev_accounts();
                accounts
                    .iter()
                    .rev()
                    .take(usize::from(args.dev_signers))
                    .map(|a| Key::from_signing_key(a.signing_key()))
                    .collect()
            }
            (file, _) => vec![key_or_dev(
                file.as_deref(),
                dev,
                usize::MAX,
                "--signer-key-file",
            )?],
        };
        let signer_addresses: Vec<_> = signers.iter().map(Key::address).collect();
        let relayer_db = sqlite(&dir.join("relayer.db"));
        let master_key =
            MasterKey::from_file(&dir.join("master-key"), true).map_err(|e| e.to_string())?;
        let relayer = bursar_relayer::start(Config {
            rpc: rpc.clone(),
            db: relayer_db.clone(),
            listen: args.relayer_listen,
            signers,
            engine: EngineConfig {
                confirmations: if dev { 0 } else { 1 },
                ..EngineConfig::default()
            },
            contracts: crate::relayer::relayer_contracts(&record)?,
            master_key,
            settings: relayer_settings(
                dev,
                format!("http://{}", indexer.addr),
                args.webhook_attempts,
            ),
        })
        .await
        .map_err(|e| format!("the relayer did not start: {e}"))?;
        let host_key = host_key(&relayer_db, &dir.join("host-key")).await?;
        Ok::<_, String>((record, indexer, relayer, host_key, signer_addresses))
    };
    let (record, indexer, relayer, host_key, signers) = match stack.await {
        Ok(stack) => stack,
        Err(e) => {
            if let Some(d) = devnet {
                d.stop(&state_file).await?;
            }
            return Err(e);
        }
    };

    // 5. Where everything is (a signal from then on stops it all cleanly).
    let stop = crate::devnet::shutdown_signal();
    let relayer_url = format!("http://{}", relayer.addr);
    let indexer_url = format!("http://{}", indexer.addr);
    let up = json!({
        "rpc": rpc,
        "chainId": chain_id,
        "relayer": relayer_url,
        "indexer": indexer_url,
        "deployment": dir.join("deployment.json"),
        "hostKeyFile": dir.join("host-key"),
        "relayerSigners": signers,
    });
    std::fs::write(&up_file, format!("{up:#}\n"))
        .map_err(|e| format!("{}: {e}", up_file.display()))?;
    print_endpoints(
        &args,
        &rpc,
        chain_id,
        devnet.is_some(),
        &record,
        &relayer_url,
        &indexer_url,
        &host_key,
    );

    let signal = stop.await;
    println!("\n▶ {signal}: stopping the relayer, the indexer and the chain");
    let _ = std::fs::remove_file(&up_file);
    relayer.shutdown().await;
    indexer.shutdown().await;
    if let Some(d) = devnet {
        d.stop(&state_file).await?;
        println!("  chain state saved to {}", state_file.display());
    }
    println!(
        "✔ stopped; `bursar up --data-dir {}` continues from here",
        dir.display()
    );
    Ok(())
}

/// An in-process devnet whose state lives in a file.
struct Devnet {
    handle: bursar_devnet::Handle,
    url: String,
    /// Saves the state every minute, so a crash loses at most a minute of chain.
    saver: tokio::task::JoinHandle<()>,
}

impl Devnet {
    async fn stop(self, state_file: &Path) -> Result<(), String> {
        self.saver.abort();
        let chain = Arc::clone(&self.handle.chain);
        self.handle.shutdown().await;
        save(&chain, state_file)
    }
}

async fn start_devnet(port: u16, state_file: &Path) -> Result<Devnet, String> {
    let handle = bursar_devnet::spawn(RpcConfig {
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
        chain: ChainConfig {
            evm_fixtures: true,
            ..ChainConfig::default()
        },
        ..RpcConfig::default()
    })
    .await
    .map_err(|e| format!("cannot start the devnet on port {port}: {e}"))?;
    if state_file.exists() {
        let loaded = lock(&handle.chain).load_state(state_file);
        if let Err(e) = loaded {
            handle.shutdown().await;
            return Err(format!("cannot load {}: {e}", state_file.display()));
        }
        println!(
            "▶ Devnet at {} continues from {} (block {})",
            handle.url,
            state_file.display(),
            lock(&handle.chain).block_number()
        );
    } else {
        println!("▶ Devnet at {} (a new chain)", handle.url);
    }
    let saver = tokio::spawn({
        let chain = Arc::clone(&handle.chain);
        let path = state_file.to_path_buf();
        async move {
            loop {
                tokio::time::sleep(Duration::from_secs(60)).await;
                if let Err(e) = save(&chain, &path) {
                    tracing::warn!(error = %e, "saving the chain state failed");
                }
            }
        }
    });
    let url = handle.url.clone();
    Ok(Devnet { handle, url, saver })
}

fn save(chain: &Mutex<Chain>, path: &Path) -> Result<(), String> {
    lock(chain)
        .save_state(path)
        .map_err(|e| format!("cannot save the chain state to {}: {e}", path.display()))
}

fn lock(chain: &Mutex<Chain>) -> std::sync::MutexGuard<'_, Chain> {
    chain.lock().unwrap_or_else(|e| e.into_inner())
}

fn sqlite(path: &Path) -> String {
    format!("sqlite://{}", path.display())
}

/// The key in `file`, else (on the devnet) dev account `index` (`usize::MAX`: the last).
fn key_or_dev(file: Option<&Path>, dev: bool, index: usize, flag: &str) -> Result<Key, String> {
    if let Some(path) = file {
        return Key::from_key_file(path).map_err(|e| e.to_string());
    }
    if !dev {
        return Err(format!("not the devnet: give {flag}"));
    }
    let accounts = bursar_devnet::accounts::dev_accounts();
    let account = &accounts[index.min(accounts.len() - 1)];
    Ok(Key::from_signing_key(account.signing_key()))
}

/// The local host's API key: read from `file`, or (first run) made and written there (0600).
async fn host_key(db: &str, file: &Path) -> Result<String, String> {
    if let Ok(key) = std::fs::read_to_string(file) {
        return Ok(key.trim().to_owned());
    }
    let store = Store::connect(db).await.map_err(|e| e.to_string())?;
    let created = hosts::create(
        &store,
        "local",
        "sessions,payments,provenance,read,webhooks",
    )
    .await
    .map_err(|e| format!("cannot create the local host: {e}"))?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let write = |mut f: std::fs::File| {
        std::io::Write::write_all(&mut f, format!("{}\n", created.key).as_bytes())
    };
    options
        .open(file)
        .and_then(write)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(created.key)
}

#[allow(clippy::too_many_arguments)]
fn print_endpoints(
    args: &UpArgs,
    rpc: &str,
    chain_id: u64,
    devnet: bool,
    record: &DeploymentRecord,
    relayer: &str,
    indexer: &str,
    host_key: &str,
) {
    let dir = args.data_dir.display();
    let chain = if devnet {
        "devnet, saved on exit"
    } else {
        "external"
    };
    println!("\nBursar is up (data in {dir}; Ctrl-C to stop)\n");
    println!("  chain     {rpc}  (chain {chain_id}, {chain})");
    println!("  relayer   {relayer}  (API document: {relayer}/openapi.json)");
    println!("  indexer   {indexer}  (API document: {indexer}/openapi.json)");
    println!("  host key  {host_key}  (in {dir}/host-key)");
    println!("  pages     {indexer}/ui/sessions  (the audit explorer)");
    println!("            {relayer}/console  (the host console: paste the host key)");
    for c in Contract::ALL {
        if let Some(address) = record.address(c.key()) {
            println!("  {:<22}{address}", c.key());
        }
    }
    if chain_id == bursar_devnet::DEFAULT_CHAIN_ID {
        let usdc = bursar_bindings::evm::USDC;
        println!(
            "  {:<22}{usdc}  (`bursar faucet` mints it for an owner)",
            "usdc"
        );
    }
    // This very binary: `bursar` is not on PATH after `cargo run`.
    let bursar = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "bursar".into());
    println!("\nTry:");
    println!("  curl -s {relayer}/v1/host -H 'Authorization: Bearer {host_key}'");
    println!("  curl -s {relayer}/v1/sessions -H 'Authorization: Bearer {host_key}'");
    println!("  curl -s {indexer}/v1/sessions");
    println!("  curl -s {relayer}/x402/supported");
    println!(
        "  {bursar} allowlist create --host-key {host_key} --relayer {relayer} --entry 0xVENDOR=name"
    );
    println!("  {bursar} demo --against-running --data-dir {dir}   # an agent session, end to end");
    println!(
        "  {bursar} demo --against-running --session-only --owner 0xYOU --data-dir {dir}   # approve it in your wallet"
    );
    println!("READY {relayer} {indexer}");
}

/// The relayer's settings under `up`, on the devnet (`dev`) or another chain.
fn relayer_settings(dev: bool, indexer_url: String, webhook_attempts: u32) -> Settings {
    // On the devnet everything is on this machine: a host's receiver, or an x402 server an
    // agent tries, may be too. On any other chain loopback is the host's own network.
    let local = bursar_egress::Policy {
        allow_loopback: dev,
    };
    Settings {
        // A devnet's clock is moved ahead by demos and tests (`evm_increaseTime`): intents
        // signed just before a jump must outlive it.
        intent_ttl: Duration::from_secs(if dev { 86_400 } else { 600 }),
        webhook_egress: local,
        fetch_egress: local,
        indexer_url: Some(indexer_url),
        webhook_attempts: webhook_attempts.max(1),
        ..Settings::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `up --rpc` on a chain that is not the devnet reaches no loopback address for agents'
    /// fetches or hosts' webhooks; on the devnet it does.
    #[test]
    fn loopback_is_reached_only_on_the_devnet() {
        let url = "http://127.0.0.1:8548".to_owned();
        let other = relayer_settings(false, url.clone(), 8);
        assert!(!other.fetch_egress.allow_loopback && !other.webhook_egress.allow_loopback);
        assert_eq!(other.intent_ttl, Duration::from_secs(600));
        let dev = relayer_settings(true, url, 0);
        assert!(dev.fetch_egress.allow_loopback && dev.webhook_egress.allow_loopback);
        assert_eq!(dev.webhook_attempts, 1);
    }
}
