//! `bursar`: the project's command-line tool.

use clap::{Parser, Subcommand};

mod demo;
mod deploy;
mod devnet;
mod relayer;

#[derive(Parser)]
#[command(name = "bursar", version, about = "Bursar command-line tool")]
struct Cli {
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
}

// The devnet instantiates programs with fresh memory many times per transaction (see
// `bursar_devnet::allocator`).
#[global_allocator]
static ALLOCATOR: bursar_devnet::allocator::MiMalloc = bursar_devnet::allocator::MiMalloc;

fn main() -> std::process::ExitCode {
    bursar_devnet::allocator::keep_freed_memory();
    let cli = Cli::parse();
    // Structured log lines on stderr (stdout carries the banner); level from RUST_LOG. The
    // demo narrates on stdout, so its in-process relayer logs only warnings by default.
    let default = match cli.command {
        Command::Demo(_) => "info,bursar_relayer=warn",
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
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "bursar failed");
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
