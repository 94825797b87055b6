//! `bursar demo`: the whole system on one machine — devnet, contracts deployed, an agent
//! session narrated end to end, and its audit trail served by the indexer.
//!
//! The stack starts in order (devnet, deployment, indexer; the scenario starts the relayer),
//! then the scenario runs against it, and the session's audit trail comes from the indexer's
//! API, checked against the chain's own logs.

use std::net::SocketAddr;
use std::path::PathBuf;

use bursar_client::{Client, Key};
use bursar_demo::{audit, Actors, Contracts, Narrator};
use bursar_deploy::{DeployOptions, Network};
use bursar_devnet::{ChainConfig, RpcConfig};

use crate::deploy::{git_commit, print_progress};

#[derive(clap::Args, Debug)]
pub(crate) struct DemoArgs {
    /// Use this dev chain's JSON-RPC instead of starting a devnet in-process.
    #[arg(long, env = "BURSAR_RPC_URL")]
    rpc: Option<String>,
    /// Directory of the built contracts (<name>.code, sizes.json): by default
    /// `target/contracts` when a build is there, else the committed `contracts/artifacts`.
    #[arg(long)]
    artifacts: Option<PathBuf>,
    /// Where the demo's deployment record goes (not the committed deployments/).
    #[arg(long, default_value = "target/demo/deployments")]
    deployments: PathBuf,
    /// Run the story against the stack `bursar up` runs (its chain, contracts, relayer and
    /// indexer, found in `<data dir>/up.json`) instead of starting one.
    #[arg(long)]
    against_running: bool,
    /// With --against-running: only open a session (the story's funding, vendors and terms),
    /// leave it open, and print it as JSON with its capability token, to try `bursar pay`,
    /// `bursar fetch` or an MCP client with.
    #[arg(long, requires = "against_running")]
    session_only: bool,
    /// With --session-only: prepare the session for this owner's own wallet instead of opening
    /// it (the owner gets the deposit), and print its approval page's link: open it in a
    /// browser whose wallet holds the owner's key and is on the devnet, and approve.
    #[arg(long, requires = "session_only")]
    owner: Option<alloy_primitives::Address>,
    /// `bursar up`'s data directory (with --against-running).
    #[arg(long, env = "BURSAR_DATA_DIR", default_value = ".bursar")]
    data_dir: PathBuf,
}

/// Opens a session on the running stack and prints it (stdout carries only the JSON).
async fn trial(up: Running, owner: Option<alloy_primitives::Address>) -> Result<(), String> {
    let client = Client::new(up.rpc.clone());
    let seed = client.block_number().await.map_err(|e| e.to_string())?;
    let actors = Actors::fresh(operator(), &format!("trial {seed}"));
    let relayer = up.relayer.url.clone();
    if let Some(owner) = owner {
        let t = bursar_demo::prepare_trial(&client, &up.record, actors, up.relayer, owner)
            .await
            .map_err(|e| format!("preparing the session failed: {e}"))?;
        let printed = serde_json::json!({
            "sessionId": t.session_id,
            "preparedId": t.prepared_id,
            "approvalUrl": t.approval_url,
            "relayer": relayer,
            "token": t.token.to_checksum(None),
            "allowed": t.allowed.map(|a| a.to_checksum(None)),
            "notAllowed": t.not_allowed.to_checksum(None),
        });
        println!("{printed:#}");
        return Ok(());
    }
    let t = bursar_demo::open_trial(&client, &up.record, actors, up.relayer)
        .await
        .map_err(|e| format!("opening the session failed: {e}"))?;
    let printed = serde_json::json!({
        "sessionId": t.session_id,
        "capabilityToken": t.capability_token,
        "relayer": relayer,
        "token": t.token.to_checksum(None),
        "allowed": t.allowed.map(|a| a.to_checksum(None)),
        "notAllowed": t.not_allowed.to_checksum(None),
    });
    println!("{printed:#}");
    Ok(())
}

/// The devnet's first dev account: it mints the test USDC and gives gas money.
fn operator() -> Key {
    let dev = &bursar_devnet::accounts::dev_accounts()[0];
    Key::from_bytes(&dev.private_key).expect("dev keys are valid")
}

/// What `<data dir>/up.json` says about a running stack.
struct Running {
    rpc: String,
    record: bursar_deploy::DeploymentRecord,
    relayer: bursar_demo::RunningRelayer,
    indexer: String,
}

fn running(dir: &std::path::Path) -> Result<Running, String> {
    let path = dir.join(crate::up::UP_FILE);
    let text = std::fs::read_to_string(&path).map_err(|_| {
        format!(
            "no {}: start the stack first (`bursar up --data-dir {}`)",
            path.display(),
            dir.display()
        )
    })?;
    let up: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let field = |name: &str| {
        up[name]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("{} has no {name}", path.display()))
    };
    let record_path = PathBuf::from(field("deployment")?);
    let record = bursar_deploy::DeploymentRecord::read(&record_path)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("no deployment record at {}", record_path.display()))?;
    let key_file = field("hostKeyFile")?;
    let host_key = std::fs::read_to_string(&key_file)
        .map_err(|e| format!("{key_file}: {e}"))?
        .trim()
        .to_owned();
    Ok(Running {
        rpc: field("rpc")?,
        record,
        relayer: bursar_demo::RunningRelayer {
            url: field("relayer")?,
            host_key,
            signers: up["relayerSigners"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|a| a.as_str().and_then(|a| a.parse().ok()))
                .collect::<Option<Vec<_>>>()
                .filter(|s| !s.is_empty())
                .ok_or_else(|| {
                    format!(
                        "{}: relayerSigners is not a list of addresses",
                        path.display()
                    )
                })?,
        },
        indexer: field("indexer")?,
    })
}

/// Prints the story as it happens.
struct Print;

impl Narrator for Print {
    fn step(&mut self, title: &str) {
        println!("\n▶ {title}");
    }
    fn note(&mut self, line: &str) {
        println!("  {line}");
    }
}

pub(crate) fn run(args: DemoArgs) -> Result<(), String> {
    crate::support::block_on(demo(args))
}

/// The story against `bursar up`'s stack; the audit trail from its indexer.
async fn against_running(args: DemoArgs) -> Result<(), String> {
    let up = running(&args.data_dir)?;
    if args.session_only {
        return trial(up, args.owner).await;
    }
    println!(
        "▶ Against the running stack: chain {}, relayer {}, indexer {}",
        up.rpc, up.relayer.url, up.indexer
    );
    let client = Client::new(up.rpc.clone());
    let seed = format!(
        "{}",
        client.block_number().await.map_err(|e| e.to_string())?
    );
    let actors = Actors::fresh(operator(), &seed);
    let report = bursar_demo::run_against(&client, &up.record, actors, up.relayer, &mut Print)
        .await
        .map_err(|e| format!("the scenario failed: {e}"))?;
    // The running indexer catches up with the story's last block.
    let head = client.latest_block().await.map_err(|e| e.to_string())?;
    let health = format!("{}/health", up.indexer);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let indexed = reqwest::get(&health)
            .await
            .ok()
            .map(|r| r.json::<serde_json::Value>());
        let hash = match indexed {
            Some(body) => body
                .await
                .ok()
                .and_then(|v| v["indexedBlockHash"].as_str().map(str::to_owned)),
            None => None,
        };
        if hash.as_deref() == Some(head.hash.to_string().as_str()) {
            break;
        }
        if std::time::Instant::now() > deadline {
            return Err(format!(
                "the indexer at {} did not reach block {} within a minute",
                up.indexer, head.number
            ));
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    print_trail(&client, &up.record, &report, &up.indexer).await
}

async fn demo(args: DemoArgs) -> Result<(), String> {
    if args.against_running {
        return against_running(args).await;
    }
    // 1. The chain.
    let (url, _devnet) = match &args.rpc {
        Some(url) => (url.clone(), None),
        None => {
            let handle = bursar_devnet::spawn(RpcConfig {
                addr: SocketAddr::from(([127, 0, 0, 1], 0)),
                chain: ChainConfig {
                    evm_fixtures: true,
                    ..ChainConfig::default()
                },
                ..RpcConfig::default()
            })
            .await
            .map_err(|e| format!("cannot start the devnet: {e}"))?;
            println!(
                "▶ Devnet running at {} (chain {})",
                handle.url,
                bursar_devnet::DEFAULT_CHAIN_ID
            );
            (handle.url.clone(), Some(handle))
        }
    };
    let client = Client::new(url);

    // 2. The contracts.
    println!("\n▶ Deploying the contracts through the StylusDeployer");
    let operator_key = {
        let dev = &bursar_devnet::accounts::dev_accounts()[0];
        Key::from_bytes(&dev.private_key).expect("dev keys are valid")
    };
    let network = Network::named("devnet").expect("known network");
    let options = DeployOptions {
        record_path: args.deployments.join("devnet.json"),
        network,
        artifacts_dir: crate::support::artifacts(args.artifacts.as_deref()),
        git_commit: git_commit(std::path::Path::new(".")),
    };
    let record =
        bursar_deploy::deploy(&client, operator_key.clone(), &options, &mut print_progress)
            .await
            .map_err(|e| e.to_string())?;

    // 3. The indexer, following the chain from the deployment on (a SQLite file per run).
    let index_db =
        std::env::temp_dir().join(format!("bursar-demo-index-{}.db", std::process::id()));
    let (followed, start_block) = crate::support::followed(&record)?;
    let indexer = bursar_indexer::start(bursar_indexer::Config {
        rpc: client.url().to_string(),
        db: format!("sqlite://{}", index_db.display()),
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        contracts: followed,
        follow: bursar_indexer::FollowConfig {
            start_block,
            window: 8,
            poll: std::time::Duration::from_millis(50),
            ..bursar_indexer::FollowConfig::default()
        },
        // A run's own key: its exports are not kept.
        signing_key: bursar_indexer::audit::sign::generate_key(),
    })
    .await
    .map_err(|e| format!("cannot start the indexer: {e}"))?;
    println!(
        "\n▶ Indexer following the contracts, API at http://{}",
        indexer.addr
    );

    // 4. The story.
    let seed = format!(
        "{}",
        client.block_number().await.map_err(|e| e.to_string())?
    );
    let actors = Actors::fresh(operator_key, &seed);
    let report = bursar_demo::run(&client, &record, actors, &mut Print)
        .await
        .map_err(|e| format!("the scenario failed: {e}"))?;

    // 5. The audit trail.
    let head = client.latest_block().await.map_err(|e| e.to_string())?;
    if !indexer
        .synced_to(&head.hash.to_string(), std::time::Duration::from_secs(60))
        .await
    {
        return Err(format!(
            "the indexer did not reach block {} within a minute",
            head.number
        ));
    }
    print_trail(
        &client,
        &record,
        &report,
        &format!("http://{}", indexer.addr),
    )
    .await?;
    indexer.shutdown().await;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", index_db.display()));
    }
    Ok(())
}

/// The session's events and token movements as the indexer at `base` serves them, checked
/// against the chain's own logs, with allowlist changes (which the indexer does not attribute
/// to sessions) from the logs; printed.
async fn print_trail(
    client: &Client,
    record: &bursar_deploy::DeploymentRecord,
    report: &bursar_demo::Report,
    base: &str,
) -> Result<(), String> {
    let contracts = Contracts::from_record(record).map_err(|e| e.to_string())?;
    let indexed = audit::indexed_trail(base, &contracts, report.session_id).await?;
    let chain = audit::trail(client, &contracts, report.session_id, report.first_block)
        .await
        .map_err(|e| e.to_string())?;
    let position = |e: &audit::AuditEntry| (e.block, e.tx, e.log_index);
    let from_chain: Vec<_> = chain
        .iter()
        .filter(|e| audit::indexed_kind(e))
        .map(position)
        .collect();
    let from_indexer: Vec<_> = indexed.iter().map(position).collect();
    if from_indexer != from_chain {
        return Err(format!(
            "the indexer's trail ({} events) differs from eth_getLogs' ({} events)",
            from_indexer.len(),
            from_chain.len()
        ));
    }
    let mut trail: Vec<audit::AuditEntry> = indexed;
    trail.extend(chain.into_iter().filter(|e| !audit::indexed_kind(e)));
    trail.sort_by_key(|e| (e.block, e.log_index));
    println!(
        "\n▶ Audit trail of session {} ({} events: {} from the indexer's API, equal to \
         eth_getLogs'; {} allowlist events from eth_getLogs)",
        bursar_demo::audit::session_label(report.session_id),
        trail.len(),
        from_indexer.len(),
        trail.len() - from_indexer.len()
    );
    for entry in &trail {
        println!("  {entry}");
    }
    let passports = bursar_demo::passports::read(base, report).await?;
    if !passports.is_empty() {
        println!("\n▶ The agents' passports (ERC-8004), from the indexer: the sale on both sides");
        for line in &passports {
            println!("  {line}");
        }
    }
    println!(
        "\n✔ {} transactions; spent {}, refunded {}; every event and balance checked.",
        report.transactions.len(),
        bursar_demo::money::format_usd(report.spent),
        bursar_demo::money::format_usd(report.refund)
    );
    Ok(())
}
