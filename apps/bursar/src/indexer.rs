//! `bursar indexer`: follows the Bursar contracts' events into SQL and serves audit queries
//! until Ctrl-C / SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use bursar_client::Client;
use bursar_indexer::{Config, FollowConfig};

#[derive(clap::Args, Debug)]
pub(crate) struct IndexerArgs {
    /// The chain's JSON-RPC endpoint.
    #[arg(
        long,
        env = "BURSAR_INDEXER_RPC",
        default_value = "http://127.0.0.1:8547"
    )]
    rpc: String,
    /// The database: `sqlite://FILE` (created if missing) or `postgres://…`.
    #[arg(
        long,
        env = "BURSAR_INDEXER_DB",
        default_value = "sqlite://bursar-index.db"
    )]
    db: String,
    /// Where the API listens.
    #[arg(long, env = "BURSAR_INDEXER_LISTEN", default_value = "127.0.0.1:8548")]
    listen: SocketAddr,
    /// The network: names `deployments/<network>.json`, where the contracts' addresses and
    /// deploy block are.
    #[arg(long, env = "BURSAR_NETWORK", default_value = "devnet")]
    network: String,
    /// The deployment record to use instead of `deployments/<network>.json` (e.g. the one
    /// `bursar demo` writes).
    #[arg(long, env = "BURSAR_DEPLOYMENT")]
    deployment: Option<PathBuf>,
    /// Recent blocks read one by one and checked for reorgs.
    #[arg(long, env = "BURSAR_INDEXER_WINDOW", default_value_t = 64)]
    window: u64,
    /// The largest block range asked of `eth_getLogs` (it shrinks when the node refuses).
    #[arg(long, env = "BURSAR_INDEXER_MAX_RANGE", default_value_t = 10_000)]
    max_range: u64,
    /// How often to look for a new block once caught up, in milliseconds.
    #[arg(long, env = "BURSAR_INDEXER_POLL_MS", default_value_t = 500)]
    poll_ms: u64,
    /// A WebSocket endpoint (`ws://…`, `wss://…`) of the same node: new heads wake the indexer
    /// as they arrive (it polls while the subscription is down).
    #[arg(long, env = "BURSAR_INDEXER_WS")]
    ws: Option<String>,
    /// Backfill ranges fetched at once.
    #[arg(long, env = "BURSAR_INDEXER_IN_FLIGHT", default_value_t = 4)]
    in_flight: usize,
    /// The key audit exports are signed with (hex): made, with mode 0600, when missing. Keep
    /// it: auditors pin its address (`/health` says `exportSigner`).
    #[arg(
        long,
        env = "BURSAR_INDEXER_SIGNING_KEY_FILE",
        default_value = "bursar-indexer.key"
    )]
    signing_key_file: PathBuf,
}

pub(crate) fn run(args: IndexerArgs) -> Result<(), String> {
    crate::support::block_on(async move {
        let chain_id = Client::new(args.rpc.clone())
            .chain_id()
            .await
            .map_err(|e| e.to_string())?;
        let record =
            crate::support::deployment_record(args.deployment.as_deref(), &args.network, chain_id)?;
        let (contracts, start_block) = crate::support::followed(&record)?;
        let window = args.window;
        let signing_key = bursar_indexer::audit::sign::load_or_create_key(&args.signing_key_file)
            .map_err(|e| e.to_string())?;
        let signer = signing_key.address();
        let indexer = bursar_indexer::start(Config {
            rpc: args.rpc,
            db: args.db,
            listen: args.listen,
            contracts,
            follow: FollowConfig {
                start_block,
                window: args.window,
                max_range: args.max_range.max(1),
                poll: Duration::from_millis(args.poll_ms.max(10)),
                ws: args.ws,
                in_flight: args.in_flight.max(1),
            },
            signing_key,
        })
        .await
        .map_err(|e| e.to_string())?;
        let stop = crate::devnet::shutdown_signal();
        println!("Indexer API on http://{} (Ctrl-C to stop)", indexer.addr);
        println!(
            "Audit exports signed by {signer} (key in {})",
            args.signing_key_file.display()
        );
        let bar = progress_bar(&indexer, start_block, window);
        stop.await;
        if let Some(bar) = bar {
            bar.abort();
        }
        indexer.shutdown().await;
        Ok(())
    })
}

/// Whether the log lines of the backfill give way to a progress bar: on a terminal.
pub(crate) fn shows_progress_bar() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stderr())
}

/// On a terminal, a progress bar of the backfill until the indexer reaches the recent window
/// (elsewhere the follower logs a line per range).
fn progress_bar(
    indexer: &bursar_indexer::Indexer,
    start: u64,
    window: u64,
) -> Option<tokio::task::JoinHandle<()>> {
    if !shows_progress_bar() {
        return None;
    }
    let metrics = indexer.metrics();
    let style = indicatif::ProgressStyle::with_template(
        "backfill {bar:40} block {pos}/{len} ({per_sec}, {eta} left) {msg}",
    )
    .expect("a valid template");
    let bar = indicatif::ProgressBar::new(0).with_style(style);
    Some(tokio::spawn(async move {
        loop {
            let (head, indexed) = (metrics.head.get() as u64, metrics.indexed.get() as u64);
            bar.set_length(head.saturating_sub(window).saturating_sub(start));
            bar.set_position(indexed.saturating_sub(start));
            bar.set_message(format!("{} events", metrics.events.get()));
            if head > 0 && indexed + window >= head {
                bar.finish_with_message(format!(
                    "{} events; following the head",
                    metrics.events.get()
                ));
                return;
            }
            // A display's refresh, not synchronization.
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }))
}
