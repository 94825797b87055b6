//! `bursar devnet`: runs [`bursar_devnet`]'s chain and JSON-RPC server until Ctrl-C / SIGTERM.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bursar_devnet::accounts::{dev_accounts, TEST_MNEMONIC};
use bursar_devnet::{Chain, ChainConfig, RpcConfig};

#[derive(clap::Args, Debug)]
pub(crate) struct DevnetArgs {
    /// Address to listen on.
    #[arg(long, env = "BURSAR_DEVNET_HOST", default_value = "127.0.0.1")]
    host: IpAddr,
    /// Port to listen on (0 = any free port; the bound address is printed).
    #[arg(long, env = "BURSAR_DEVNET_PORT", default_value_t = 8547)]
    port: u16,
    /// Chain id.
    #[arg(long, env = "BURSAR_DEVNET_CHAIN_ID", default_value_t = bursar_devnet::DEFAULT_CHAIN_ID)]
    chain_id: u64,
    /// Interval mining: turn automine off and mine a block every N seconds.
    #[arg(long, env = "BURSAR_DEVNET_BLOCK_TIME", value_name = "SECONDS",
          value_parser = clap::value_parser!(u64).range(1..))]
    block_time: Option<u64>,
    /// Finality depth: the `safe` tag lags the head by N blocks and `finalized` by 2N, so
    /// indexers and relayers can be tested on finality labels (0: every block is final).
    #[arg(
        long,
        env = "BURSAR_DEVNET_FINALITY_DEPTH",
        value_name = "N",
        default_value_t = 0
    )]
    finality_depth: u64,
    /// Keep the state of only the last N blocks (memory stays bounded on long runs; state
    /// queries and reorgs reach back N blocks). Default: keep all.
    #[arg(long, env = "BURSAR_DEVNET_PRUNE_HISTORY", value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..))]
    prune_history: Option<u64>,
    /// Keep the transactions, receipts and logs of only the last N blocks (older blocks keep
    /// their headers; their transactions are no longer found, their logs no longer returned).
    /// With --prune-history, memory stays flat on any run. Default: keep all.
    #[arg(long, env = "BURSAR_DEVNET_TRANSACTION_BLOCK_KEEPER", value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..))]
    transaction_block_keeper: Option<u64>,
    /// State file: loaded on start if it exists, written (atomically) on exit, like anvil's
    /// `--state`. Holds the accounts, program activations, blocks, transactions and receipts.
    #[arg(long, env = "BURSAR_DEVNET_STATE", value_name = "FILE")]
    state: Option<PathBuf>,
    /// Put Safe 1.4.1, USDC (FiatToken v2.2), Multicall3, Permit2 and the ERC-8004 Identity and
    /// Reputation registries in the genesis state at their Arbitrum One addresses; dev account 0
    /// owns and mints USDC.
    #[arg(long, env = "BURSAR_DEVNET_WITH_EVM_FIXTURES")]
    with_evm_fixtures: bool,
}

pub(crate) fn run(args: DevnetArgs) -> Result<(), String> {
    crate::support::block_on(serve(args))
}

async fn serve(args: DevnetArgs) -> Result<(), String> {
    let config = RpcConfig {
        addr: SocketAddr::new(args.host, args.port),
        chain: ChainConfig {
            chain_id: args.chain_id,
            finality_depth: args.finality_depth,
            prune_history: args.prune_history,
            transaction_block_keeper: args.transaction_block_keeper,
            evm_fixtures: args.with_evm_fixtures,
            ..ChainConfig::default()
        },
        block_time: args.block_time.map(Duration::from_secs),
    };
    let handle = bursar_devnet::spawn(config)
        .await
        .map_err(|e| format!("cannot listen on {}:{}: {e}", args.host, args.port))?;
    if let Some(path) = args.state.as_deref().filter(|p| p.exists()) {
        let loaded = lock(&handle.chain).load_state(path);
        if let Err(e) = loaded {
            handle.shutdown().await;
            return Err(format!("cannot load the state file: {e}"));
        }
        let head = lock(&handle.chain).block_number();
        tracing::info!(path = %path.display(), head, "state loaded");
    }
    let stop = shutdown_signal();
    print_banner(&args, handle.addr);
    tracing::info!(addr = %handle.addr, chain_id = args.chain_id, block_time = ?args.block_time, "devnet started");

    let signal = stop.await;
    tracing::info!(signal, "shutting down");
    let chain = Arc::clone(&handle.chain);
    handle.shutdown().await;
    if let Some(path) = &args.state {
        lock(&chain)
            .save_state(path)
            .map_err(|e| format!("cannot save the state file: {e}"))?;
        tracing::info!(path = %path.display(), "state saved");
    }
    tracing::info!("devnet stopped");
    Ok(())
}

/// The chain, even if a request handler panicked while holding it.
fn lock(chain: &Mutex<Chain>) -> std::sync::MutexGuard<'_, Chain> {
    chain.lock().unwrap_or_else(|e| e.into_inner())
}

fn print_banner(args: &DevnetArgs, addr: SocketAddr) {
    let (chain_id, block_time) = (args.chain_id, args.block_time);
    let accounts = dev_accounts();
    let mut out = String::from("\nbursar devnet\n\nAvailable Accounts\n==================\n");
    for (i, a) in accounts.iter().enumerate() {
        out += &format!("({i}) {} (10000 ETH)\n", a.address);
    }
    out += "\nPrivate Keys\n==================\n";
    for (i, a) in accounts.iter().enumerate() {
        out += &format!("({i}) {}\n", a.private_key);
    }
    out += &format!(
        "\nWallet\n==================\nMnemonic:          {TEST_MNEMONIC}\nDerivation path:   m/44'/60'/0'/0/\n\n"
    );
    out += &format!("Chain ID\n==================\n{chain_id}\n\n");
    if args.with_evm_fixtures {
        out += "EVM fixtures (USDC minted by account 0)\n==================\n";
        for (name, address) in bursar_devnet::fixtures::addresses() {
            out += &format!("{name:<29} {address}\n");
        }
        out += &format!(
            "{:<29} {}\n{:<29} {}\n",
            "ERC-8004 IdentityRegistry",
            bursar_bindings::erc8004::IDENTITY_REGISTRY,
            "ERC-8004 ReputationRegistry",
            bursar_bindings::erc8004::REPUTATION_REGISTRY
        );
        out += "\n";
    }
    match block_time {
        Some(s) => out += &format!("Mining: a block every {s}s (automine off)\n\n"),
        None => out += "Mining: automine\n\n",
    }
    out += &format!("Listening on http://{addr} (ws on the same port)");
    // Stdout is line-buffered: the final line is flushed by `println!`.
    println!("{out}");
}

/// Ctrl-C or (on Unix) SIGTERM, awaited by the future answered: its name. The handlers are
/// installed when this is called, not when the future is first polled, so a service that
/// announces itself afterwards cannot be killed by a signal sent on the announcement.
pub(crate) fn shutdown_signal() -> impl std::future::Future<Output = &'static str> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let installed = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        );
        async move {
            match installed {
                (Ok(mut int), Ok(mut term)) => tokio::select! {
                    _ = int.recv() => "SIGINT",
                    _ = term.recv() => "SIGTERM",
                },
                (_, Err(e)) | (Err(e), _) => {
                    tracing::warn!(error = %e, "cannot watch SIGTERM; Ctrl-C only");
                    let _ = tokio::signal::ctrl_c().await;
                    "SIGINT"
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        }
    }
}
