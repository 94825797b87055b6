//! `bursar`: the project's command-line tool.

use clap::{CommandFactory, Parser, Subcommand};

mod allowlist;
mod audit;
mod capability;
mod config;
mod demo;
mod deploy;
mod devnet;
mod faucet;
mod fetch;
mod indexer;
mod limits;
mod mcp;
mod pay;
mod relayer;
mod sell;
mod support;
mod up;

#[derive(Parser)]
#[command(name = "bursar", version, about = "Bursar command-line tool")]
struct Cli {
    /// A TOML file of defaults, a table per command with its long flags as keys
    /// (`[indexer]` `rpc = "http://…"`); flags and environment variables beat it. Else
    /// $BURSAR_CONFIG, else ./bursar.toml when present.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<std::path::PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a local Stylus development chain (JSON-RPC over HTTP and WebSocket).
    Devnet(devnet::DevnetArgs),
    /// Deploy, activate and wire the contracts; write deployments/<network>.json.
    Deploy(deploy::DeployArgs),
    /// The end-to-end demonstration: devnet, deployment, an agent session, its audit trail.
    Demo(demo::DemoArgs),
    /// Run the relayer (HTTP API and transaction engine), or manage its hosts' API keys.
    Relayer(relayer::RelayerArgs),
    /// Run the indexer: follow the contracts' events into SQL and serve audit queries.
    Indexer(indexer::IndexerArgs),
    /// Export a session's hash-chained audit trail, or verify an export against the chain.
    Audit(audit::AuditArgs),
    /// An HTTP request, curl-like, that pays an x402 `402 Payment Required` from the session
    /// (BURSAR_CAPABILITY_TOKEN) within its rules and `--max-amount`, then retries once.
    Fetch(fetch::FetchArgs),
    /// Sell a file behind HTTP 402 (x402), paid at the session's ERC-8004 agent's wallet
    /// (BURSAR_CAPABILITY_TOKEN); serves whoever paid until Ctrl-C.
    Sell(sell::SellArgs),
    /// A payment from the session (BURSAR_CAPABILITY_TOKEN), for scripts: printed as JSON once
    /// confirmed; a refusal names the session's rule.
    Pay(pay::PayArgs),
    /// What the session (BURSAR_CAPABILITY_TOKEN) may still spend and whom it may pay, as JSON.
    Limits(limits::LimitsArgs),
    /// Agents' MCP server over stdio: session_limits, pay, fetch, payment_status,
    /// record_provenance, session_history, for the session of BURSAR_CAPABILITY_TOKEN.
    Mcp(mcp::McpArgs),
    /// Print a service's OpenAPI 3.1 document (what it serves at /openapi.json), to generate
    /// clients from.
    Openapi {
        /// `relayer` or `indexer`.
        #[arg(value_enum)]
        service: Service,
    },
    /// USDC on the devnet for an owner (a fresh one by default, its key printed): what a
    /// newcomer needs to open a session on `bursar up`'s chain. Refuses any other chain.
    Faucet(faucet::FaucetArgs),
    /// A host's counterparty allowlists, made and edited through the relayer
    /// (BURSAR_HOST_KEY): create, list, show, set, remove.
    Allowlist(allowlist::AllowlistArgs),
    /// The whole stack, for real local use: devnet, contracts, indexer, relayer and a host key,
    /// kept in a data directory (a restart continues); Ctrl-C stops it.
    Up(up::UpArgs),
}

/// A service with an HTTP API.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Service {
    Relayer,
    Indexer,
}

// The devnet instantiates programs with fresh memory many times per transaction (see
// `bursar_devnet::allocator`).
#[global_allocator]
static ALLOCATOR: bursar_devnet::allocator::MiMalloc = bursar_devnet::allocator::MiMalloc;

fn main() -> std::process::ExitCode {
    bursar_devnet::allocator::keep_freed_memory();
    let args: Vec<String> = std::env::args().collect();
    if let Err(e) = config::apply(&Cli::command(), &args) {
        eprintln!("error: {e}");
        return std::process::ExitCode::FAILURE;
    }
    let cli = Cli::parse();
    // Structured log lines on stderr (stdout carries the banner); level from RUST_LOG. The
    // demo narrates on stdout, so its in-process relayer and indexer log only warnings by
    // default.
    let default = match cli.command {
        Command::Demo(_) => "info,bursar_relayer=warn,bursar_indexer=warn",
        // On a terminal a progress bar shows the backfill instead of a line per range.
        Command::Indexer(_) if indexer::shows_progress_bar() => {
            "info,bursar_indexer::follower=warn"
        }
        // Curl's manners: the answer on stdout, only what went wrong on stderr.
        Command::Fetch(_)
        | Command::Sell(_)
        | Command::Pay(_)
        | Command::Limits(_)
        | Command::Mcp(_)
        | Command::Allowlist(_)
        | Command::Faucet(_) => "warn",
        _ => "info",
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default)),
        )
        .init();
    let result = match cli.command {
        Command::Devnet(args) => devnet::run(args),
        Command::Deploy(args) => deploy::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Relayer(args) => relayer::run(args),
        Command::Indexer(args) => indexer::run(args),
        Command::Audit(args) => audit::run(args),
        Command::Up(args) => up::run(args),
        Command::Fetch(args) => fetch::run(args),
        Command::Sell(args) => sell::run(args),
        Command::Pay(args) => match pay::run(args) {
            Ok(pay::Paid::Waiting) => return std::process::ExitCode::from(pay::WAITING),
            paid => paid.map(|_| ()),
        },
        Command::Limits(args) => limits::run(args),
        Command::Allowlist(args) => allowlist::run(args),
        Command::Faucet(args) => faucet::run(args),
        Command::Mcp(args) => mcp::run(args),
        Command::Openapi { service } => {
            let doc = match service {
                Service::Relayer => serde_json::to_value(bursar_relayer::api::document()),
                Service::Indexer => serde_json::to_value(bursar_indexer::api::document()),
            };
            doc.and_then(|doc| serde_json::to_writer_pretty(std::io::stdout().lock(), &doc))
                .map(|()| println!())
                .map_err(|e| e.to_string())
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // Once, on stderr: a log line too would say it twice.
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
