//! `bursar relayer`: runs the relayer (API and transaction engine) until Ctrl-C / SIGTERM;
//! `bursar relayer hosts create|list|revoke` manages hosts' API keys in its database, and
//! `bursar relayer providers add` hosts' signing secrets for their sandbox providers' webhooks
//! (and API keys for the providers it polls).

use std::net::SocketAddr;
use std::path::PathBuf;

use bursar_client::{Client, Key};
use bursar_relayer::engine::submission::EngineConfig;
use bursar_relayer::engine::vault::MasterKey;
use bursar_relayer::store::Store;
use bursar_relayer::{hosts, providers, Config, Contracts, Settings};

#[derive(clap::Args, Debug)]
pub(crate) struct RelayerArgs {
    #[command(subcommand)]
    command: Option<RelayerCommand>,
    /// The chain's JSON-RPC endpoint. Also after `providers …`, which asks it whether it is the
    /// devnet when no master key is given.
    #[arg(
        long,
        global = true,
        env = "BURSAR_RELAYER_RPC",
        default_value = "http://127.0.0.1:8547"
    )]
    rpc: String,
    /// The database: `sqlite://FILE` (created if missing) or `postgres://…`. Also after
    /// `hosts …` and `providers …`, which use it.
    #[arg(
        long,
        global = true,
        env = "BURSAR_RELAYER_DB",
        default_value = "sqlite://bursar-relayer.db"
    )]
    db: String,
    /// Where the API listens.
    #[arg(long, env = "BURSAR_RELAYER_LISTEN", default_value = "127.0.0.1:8549")]
    listen: SocketAddr,
    /// A file holding one of the relayer's own keys (hex); repeat for several signers. Also
    /// `BURSAR_RELAYER_KEYS` (comma-separated hex). On the devnet (chain 412346) the last dev
    /// account signs when none is given. Keys are never printed.
    #[arg(long = "signer-key-file", value_name = "FILE")]
    signer_key_files: Vec<PathBuf>,
    /// Blocks on top of a transaction's block before the relayer calls it confirmed; by
    /// default 0 on the devnet (it mines each transaction into a final block, as `bursar up`
    /// has it) and 1 elsewhere.
    #[arg(long, env = "BURSAR_RELAYER_CONFIRMATIONS")]
    confirmations: Option<u64>,
    /// The network: names `deployments/<network>.json`, where the contracts' addresses are.
    #[arg(long, env = "BURSAR_NETWORK", default_value = "devnet")]
    network: String,
    /// The deployment record to use instead of `deployments/<network>.json` (e.g. the one
    /// `bursar demo` writes).
    #[arg(long, env = "BURSAR_DEPLOYMENT")]
    deployment: Option<PathBuf>,
    /// A file holding the master key (64 hex digits) that seals custodial session keys at
    /// rest; also `BURSAR_MASTER_KEY`. On the devnet, when neither is given,
    /// `<db file>.master-key` is created on first run (mode 0600).
    #[arg(long, global = true, value_name = "FILE")]
    master_key_file: Option<PathBuf>,
    /// How often providers without lifecycle webhooks (Runloop, Browserbase) are polled, in
    /// seconds.
    #[arg(long, env = "BURSAR_RELAYER_POLL_SECONDS", default_value_t = 15)]
    poll_seconds: u64,
    /// Runloop's API (for a proxy or a test server).
    #[arg(long, env = "BURSAR_RUNLOOP_URL", default_value = bursar_relayer::kernel::config::RUNLOOP_URL)]
    runloop_url: String,
    /// Browserbase's API (for a proxy or a test server).
    #[arg(long, env = "BURSAR_BROWSERBASE_URL", default_value = bursar_relayer::kernel::config::BROWSERBASE_URL)]
    browserbase_url: String,
    /// Let hosts' webhook endpoints be on loopback (127.0.0.0/8, ::1, localhost): for a
    /// devnet whose receivers run on this machine. Link-local, private and other internal
    /// addresses are refused whatever this says.
    #[arg(long, env = "BURSAR_WEBHOOK_ALLOW_LOOPBACK")]
    allow_loopback_webhooks: bool,
    /// Let the `fetch` tool of agents' MCP server (`/mcp`) reach loopback addresses: for a
    /// devnet whose x402 servers run on this machine. Link-local, private and other internal
    /// addresses are refused whatever this says.
    #[arg(long, env = "BURSAR_FETCH_ALLOW_LOOPBACK")]
    allow_loopback_fetch: bool,
    /// An indexer of the same contracts: the MCP `session_history` tool's events, and the
    /// approval pages' links to a session's page in its explorer.
    #[arg(long, env = "BURSAR_INDEXER_URL")]
    indexer_url: Option<String>,
    /// Failed attempts before a webhook delivery is dead (replayable from the console).
    #[arg(long, env = "BURSAR_WEBHOOK_ATTEMPTS", default_value_t = Settings::default().webhook_attempts)]
    webhook_attempts: u32,
    /// Where people reach this relayer (`https://bursar.example.com`), for the approval links
    /// it hands out (default: the address it listens on).
    #[arg(long, env = "BURSAR_PUBLIC_URL")]
    public_url: Option<String>,
    /// Requests per second per host key or capability token (bursts of twice that; 0: no
    /// limit).
    #[arg(long, env = "BURSAR_RATE_LIMIT", default_value_t = default_limit(|s| s.rate_limit))]
    rate_limit: f64,
    /// Requests per second per client address without credentials: provider webhooks, the
    /// x402 facilitator, health (0: no limit). Behind a proxy all clients share its address.
    #[arg(long, env = "BURSAR_CLIENT_RATE_LIMIT", default_value_t = default_limit(|s| s.client_rate_limit))]
    client_rate_limit: f64,
    /// Failed authentications per second per client address, past which its credentials are
    /// refused unread (0: no limit).
    #[arg(long, env = "BURSAR_AUTH_FAILURE_LIMIT", default_value_t = default_limit(|s| s.auth_failure_limit))]
    auth_failure_limit: f64,
}

/// The confirmations asked for, else the chain's default: none on the devnet, one elsewhere.
fn confirmations(given: Option<u64>, chain_id: u64) -> u64 {
    given.unwrap_or(u64::from(chain_id != bursar_devnet::DEFAULT_CHAIN_ID))
}

/// A limit's default as the flag shows it: the relayer's own (0: none).
fn default_limit(limit: impl Fn(&Settings) -> Option<f64>) -> f64 {
    limit(&Settings::default()).unwrap_or(0.0)
}

/// A rate from a flag: 0 (or less) is none.
fn limit(per_second: f64) -> Option<f64> {
    (per_second > 0.0).then_some(per_second)
}

#[derive(clap::Subcommand, Debug)]
enum RelayerCommand {
    /// Hosts (sandbox platforms) and their API keys.
    Hosts {
        #[command(subcommand)]
        command: HostsCommand,
    },
    /// Hosts' signing secrets for their sandbox providers' lifecycle webhooks, and API keys
    /// for the providers the relayer polls.
    Providers {
        #[command(subcommand)]
        command: ProvidersCommand,
    },
}

#[derive(clap::Subcommand, Debug)]
enum ProvidersCommand {
    /// Set (or replace) a host's secret for a provider, sealed under the master key.
    Add {
        /// The host's name.
        #[arg(long)]
        host: String,
        /// The provider: e2b (its webhook's signatureSecret), daytona (the Svix endpoint's
        /// whsec_ secret) or vercel (the webhook's secret); runloop or browserbase (an API key
        /// the relayer polls with).
        #[arg(long)]
        provider: String,
        /// A file holding the secret (a last newline is dropped); never printed.
        #[arg(long, value_name = "FILE")]
        secret_file: PathBuf,
    },
}

#[derive(clap::Subcommand, Debug)]
enum HostsCommand {
    /// Create a host and print its API key (shown this once; only its hash is stored).
    Create {
        /// The host's name (letters, digits, '-', '_', '.').
        name: String,
        /// What the key may do: sessions, payments, provenance, read, webhooks.
        #[arg(long, default_value = "sessions,payments,provenance,read,webhooks")]
        scopes: String,
    },
    /// List hosts' keys (prefixes, scopes, revocation), never the keys.
    List,
    /// Revoke every key of a host.
    Revoke {
        /// The host's name.
        name: String,
    },
}

const KEYS_ENV: &str = "BURSAR_RELAYER_KEYS";
const MASTER_KEY_ENV: &str = "BURSAR_MASTER_KEY";

pub(crate) fn run(args: RelayerArgs) -> Result<(), String> {
    crate::support::block_on(async move {
        match args.command {
            Some(RelayerCommand::Hosts { ref command }) => manage_hosts(&args.db, command).await,
            Some(RelayerCommand::Providers { ref command }) => {
                manage_providers(&args, command).await
            }
            None => serve(args).await,
        }
    })
}

async fn serve(args: RelayerArgs) -> Result<(), String> {
    let chain_id = chain_id_of(&args.rpc).await?;
    let signers = signer_keys(&args, chain_id)?;
    let contracts = contracts(&args, chain_id)?;
    let master_key = master_key(&args, chain_id == bursar_devnet::DEFAULT_CHAIN_ID)?;
    let relayer = bursar_relayer::start(Config {
        rpc: args.rpc.clone(),
        db: args.db.clone(),
        listen: args.listen,
        signers,
        engine: EngineConfig {
            confirmations: confirmations(args.confirmations, chain_id),
            ..EngineConfig::default()
        },
        contracts,
        master_key,
        settings: Settings {
            poll_interval: std::time::Duration::from_secs(args.poll_seconds.max(1)),
            runloop_url: args.runloop_url.clone(),
            browserbase_url: args.browserbase_url.clone(),
            webhook_egress: bursar_egress::Policy {
                allow_loopback: args.allow_loopback_webhooks,
            },
            fetch_egress: bursar_egress::Policy {
                allow_loopback: args.allow_loopback_fetch,
            },
            indexer_url: args.indexer_url.clone(),
            public_url: args.public_url.clone(),
            webhook_attempts: args.webhook_attempts.max(1),
            rate_limit: limit(args.rate_limit),
            client_rate_limit: limit(args.client_rate_limit),
            auth_failure_limit: limit(args.auth_failure_limit),
            ..Settings::default()
        },
    })
    .await
    .map_err(|e| e.to_string())?;
    let stop = crate::devnet::shutdown_signal();
    println!("Relayer API on http://{} (Ctrl-C to stop)", relayer.addr);
    stop.await;
    relayer.shutdown().await;
    Ok(())
}

/// The contracts of the deployment record (`--deployment`, else `deployments/<network>.json`),
/// which must be for the RPC's chain.
fn contracts(args: &RelayerArgs, chain_id: u64) -> Result<Contracts, String> {
    let record =
        crate::support::deployment_record(args.deployment.as_deref(), &args.network, chain_id)?;
    relayer_contracts(&record)
}

/// What the relayer drives in `record`.
pub(crate) fn relayer_contracts(
    record: &bursar_deploy::DeploymentRecord,
) -> Result<Contracts, String> {
    let d = record.contracts().map_err(|e| e.to_string())?;
    Ok(Contracts {
        wallet: d.session_wallet,
        gateway: d.session_gateway,
        receipts: d.receipt_registry,
        counterparties: d.counterparty_registry,
        counterparties_since: d.first_block,
    })
}

/// The master key: `--master-key-file`, else `BURSAR_MASTER_KEY`, else (devnet only) a key
/// file beside the SQLite database, created on first run.
fn master_key(args: &RelayerArgs, devnet: bool) -> Result<MasterKey, String> {
    if let Some(path) = &args.master_key_file {
        return MasterKey::from_file(path, false).map_err(|e| e.to_string());
    }
    if let Ok(text) = std::env::var(MASTER_KEY_ENV) {
        return MasterKey::from_hex(&text, MASTER_KEY_ENV).map_err(|e| e.to_string());
    }
    if !devnet {
        return Err(format!(
            "no master key: give --master-key-file or {MASTER_KEY_ENV} (64 hex digits; keep it \
             apart from the database)"
        ));
    }
    let path = match args.db.strip_prefix("sqlite://") {
        Some(file) => PathBuf::from(format!(
            "{}.master-key",
            file.split('?').next().unwrap_or(file)
        )),
        None => PathBuf::from("bursar-relayer.master-key"),
    };
    MasterKey::from_file(&path, true).map_err(|e| e.to_string())
}

/// The chain id `rpc` reports (errors name the endpoint redacted, never its API key).
async fn chain_id_of(rpc: &str) -> Result<u64, String> {
    Client::new(rpc.to_string())
        .chain_id()
        .await
        .map_err(|e| format!("asking the RPC for its chain id: {e}"))
}

/// The relayer's signers: key files, then `BURSAR_RELAYER_KEYS`; on the devnet, the last dev
/// account when neither is given.
fn signer_keys(args: &RelayerArgs, chain_id: u64) -> Result<Vec<Key>, String> {
    let mut keys = Vec::new();
    for path in &args.signer_key_files {
        keys.push(Key::from_key_file(path).map_err(|e| e.to_string())?);
    }
    if let Ok(list) = std::env::var(KEYS_ENV) {
        for text in list.split(',').filter(|s| !s.trim().is_empty()) {
            keys.push(Key::from_hex(text.trim(), KEYS_ENV).map_err(|e| e.to_string())?);
        }
    }
    if keys.is_empty() && chain_id == bursar_devnet::DEFAULT_CHAIN_ID {
        let dev = bursar_devnet::accounts::dev_accounts();
        keys.push(Key::from_signing_key(dev[dev.len() - 1].signing_key()));
    }
    Ok(keys)
}

async fn manage_hosts(db: &str, command: &HostsCommand) -> Result<(), String> {
    let store = Store::connect(db).await.map_err(|e| e.to_string())?;
    match command {
        HostsCommand::Create { name, scopes } => {
            let created = hosts::create(&store, name, scopes)
                .await
                .map_err(|e| e.to_string())?;
            println!("host {name} ({})", created.id);
            println!("API key (shown once; send it as `Authorization: Bearer <key>`):");
            println!("{}", created.key);
        }
        HostsCommand::List => {
            for k in hosts::list(&store).await.map_err(|e| e.to_string())? {
                let state = if k.revoked_at.is_some() {
                    "revoked"
                } else {
                    "live"
                };
                println!(
                    "{:<24} {:<22} {}…  {:<8} {}",
                    k.host_name, k.host_id, k.key_prefix, state, k.scopes
                );
            }
        }
        HostsCommand::Revoke { name } => {
            let n = hosts::revoke(&store, name)
                .await
                .map_err(|e| e.to_string())?;
            if n == 0 {
                return Err(format!("no live key for a host named {name:?}"));
            }
            println!("revoked {n} key(s) of {name}");
        }
    }
    Ok(())
}

async fn manage_providers(args: &RelayerArgs, command: &ProvidersCommand) -> Result<(), String> {
    let ProvidersCommand::Add {
        host,
        provider,
        secret_file,
    } = command;
    let provider: providers::Provider = provider.parse().map_err(|e| format!("--provider: {e}"))?;
    let secret = std::fs::read_to_string(secret_file)
        .map_err(|e| format!("--secret-file {}: {e}", secret_file.display()))?;
    // The master key the relayer itself uses on this chain (on the devnet, the key file beside
    // its database). "The devnet" is its chain id, as `serve` decides, whatever --network says;
    // the node is asked only when no key is given.
    let given = args.master_key_file.is_some() || std::env::var_os(MASTER_KEY_ENV).is_some();
    let devnet = !given && chain_id_of(&args.rpc).await? == bursar_devnet::DEFAULT_CHAIN_ID;
    let master = master_key(args, devnet)?;
    let store = Store::connect(&args.db).await.map_err(|e| e.to_string())?;
    let host_id = providers::set_secret(&store, &master, host, provider, &secret)
        .await
        .map_err(|e| e.to_string())?;
    println!("{} secret set for host {host} ({host_id})", provider.name());
    println!("{}", where_it_goes(provider, &host_id, args.listen));
    Ok(())
}

/// What the host does next with `provider`: the exact URL to point its webhooks at, or that
/// the relayer polls it.
fn where_it_goes(provider: providers::Provider, host_id: &str, listen: SocketAddr) -> String {
    use providers::Provider;
    let name = provider.name();
    match provider {
        Provider::E2b | Provider::Daytona | Provider::Vercel => format!(
            "point {name}'s lifecycle webhooks at http://{listen}/v1/hosts/{host_id}/providers/{name}/webhook \
             (your public address in place of {listen} when the relayer is behind a proxy)"
        ),
        Provider::Runloop | Provider::Browserbase => {
            format!("{name} sends no webhooks: the relayer polls it with this key")
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        command: Top,
    }

    #[derive(clap::Subcommand)]
    enum Top {
        Relayer(RelayerArgs),
    }

    #[test]
    fn providers_add_says_where_webhooks_go() {
        let listen: SocketAddr = "127.0.0.1:8549".parse().unwrap();
        let said = where_it_goes(providers::Provider::Daytona, "host_1f", listen);
        assert!(
            said.contains("http://127.0.0.1:8549/v1/hosts/host_1f/providers/daytona/webhook"),
            "{said}"
        );
        let said = where_it_goes(providers::Provider::Runloop, "host_1f", listen);
        assert!(said.contains("polls"), "{said}");
    }

    #[test]
    fn the_devnet_confirms_at_once_unless_told() {
        let devnet = bursar_devnet::DEFAULT_CHAIN_ID;
        assert_eq!(confirmations(None, devnet), 0);
        assert_eq!(confirmations(None, 42_161), 1);
        assert_eq!(confirmations(Some(3), devnet), 3);
        assert_eq!(confirmations(Some(0), 42_161), 0);
    }

    #[test]
    fn the_database_may_follow_the_hosts_subcommand() {
        let Top::Relayer(relayer) = Cli::try_parse_from([
            "bursar",
            "relayer",
            "hosts",
            "create",
            "e2b",
            "--db",
            "sqlite://elsewhere.db",
        ])
        .unwrap()
        .command;
        assert_eq!(relayer.db, "sqlite://elsewhere.db");
        assert!(matches!(
            relayer.command,
            Some(RelayerCommand::Hosts { .. })
        ));
    }
}
