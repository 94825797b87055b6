//! `bursar demo`: the whole system on one machine — devnet, contracts deployed, an agent
//! session narrated end to end, and its audit trail read back from the chain.
//!
//! The stack starts in order (devnet, deployment; the relayer and indexer will join here),
//! then the scenario runs against it.

use std::net::SocketAddr;
use std::path::PathBuf;

use bursar_client::{Client, Key};
use bursar_demo::{audit, Actors, Contracts, Narrator};
use bursar_deploy::{DeployOptions, Network};
use bursar_devnet::RpcConfig;

use crate::deploy::{git_commit, print_progress};

#[derive(clap::Args, Debug)]
pub(crate) struct DemoArgs {
    /// Use this dev chain's JSON-RPC instead of starting a devnet in-process.
    #[arg(long, env = "BURSAR_RPC_URL")]
    rpc: Option<String>,
    /// Directory of the built contracts.
    #[arg(long, default_value = "target/contracts")]
    artifacts: PathBuf,
    /// Where the demo's deployment record goes (not the committed deployments/).
    #[arg(long, default_value = "target/demo/deployments")]
    deployments: PathBuf,
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
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    rt.block_on(demo(args))
}

async fn demo(args: DemoArgs) -> Result<(), String> {
    // 1. The chain.
    let (url, _devnet) = match &args.rpc {
        Some(url) => (url.clone(), None),
        None => {
            let handle = bursar_devnet::spawn(RpcConfig {
                addr: SocketAddr::from(([127, 0, 0, 1], 0)),
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
        artifacts_dir: args.artifacts.clone(),
        git_commit: git_commit(std::path::Path::new(".")),
    };
    let record =
        bursar_deploy::deploy(&client, operator_key.clone(), &options, &mut print_progress)
            .await
            .map_err(|e| e.to_string())?;

    // 3. The story.
    let seed = format!(
        "{}",
        client.block_number().await.map_err(|e| e.to_string())?
    );
    let actors = Actors::fresh(operator_key, &seed);
    let report = bursar_demo::run(&client, &record, actors, &mut Print)
        .await
        .map_err(|e| format!("the scenario failed: {e}"))?;

    // 4. The audit trail, from chain logs alone.
    let contracts = Contracts::from_record(&record).map_err(|e| e.to_string())?;
    let trail = audit::trail(&client, &contracts, report.session_id, report.first_block)
        .await
        .map_err(|e| e.to_string())?;
    println!(
        "\n▶ Audit trail of session {} ({} events, read back with eth_getLogs)",
        bursar_demo::audit::session_label(report.session_id),
        trail.len()
    );
    for entry in &trail {
        println!("  {entry}");
    }
    println!(
        "\n✔ {} transactions; spent {}, refunded {}; every event and balance checked.",
        report.transactions.len(),
        bursar_demo::money::format_usd(report.spent),
        bursar_demo::money::format_usd(report.refund)
    );
    Ok(())
}
