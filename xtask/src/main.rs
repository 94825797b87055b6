//! Bursar build tasks. Run through the cargo alias in `.cargo/config.toml`:
//!
//! ```text
//! cargo xtask build-contracts                      # all contracts -> target/contracts/
//! cargo xtask build-contracts -p session-wallet    # just one
//! BURSAR_WASM_TARGET_DIR=/cache/wasm cargo xtask build-contracts
//! cargo xtask demo                                 # contracts, then `bursar demo`
//! cargo xtask test                                 # floors, fmt, clippy, contracts, all tests
//! cargo xtask check-contracts                      # lint, build, check contracts/artifacts
//! cargo xtask bench                                # settlement figures side by side
//! cargo xtask floors                               # crates and modules import down, no circle
//! cargo xtask cycles                               # import circles between source files
//! ```

mod bench;
mod build_contracts;
mod cycles;
mod floors;
mod lanes;
mod postgres;
mod prebuilt;
mod report;
mod setup;
mod test;
mod toolchain;
mod wasm;
mod workspace;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "xtask", about = "Bursar build tasks")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Build every Stylus contract to target/contracts/<crate>.wasm (+ .code), check the
    /// activation rules and the 24,576-byte code limit, and print a size table.
    BuildContracts(build_contracts::BuildArgs),
    /// Run everything CI runs: `cargo fmt --check`, `cargo clippy -D warnings`, then the whole
    /// workspace's tests beside `check-contracts`.
    Test(build_contracts::BuildArgs),
    /// Lint the contracts as deployed, build them into target/contracts-check/ and check the
    /// committed artifacts (contracts/artifacts) against that build.
    CheckContracts(build_contracts::BuildArgs),
    /// The main job: the contracts (the committed ones when built from these sources, else
    /// built), then `bursar demo` (devnet in-process, deploy, an agent session end to end, its
    /// audit trail).
    Demo(build_contracts::BuildArgs),
    /// The settlement benchmark in one run: gas and calldata per payment by batch size;
    /// intake and confirmed payments/s at 1, 4 and 16 sandboxes (SQLite, PostgreSQL); the
    /// indexer's ingest beside parallel raw reads and its query latencies; then those figures
    /// side by side.
    Bench(bench::BenchArgs),
    /// The claim "limits hold across replicas and restarts", rerun: relayer processes on one
    /// PostgreSQL, many clients paying one budget, every process SIGKILLed each round, a
    /// paused chain; prints what was paid over the budget, accepted then lost, and executed
    /// twice (each must be 0).
    Crash(bench::CrashArgs),
    /// Check the floors of docs/ARCHITECTURE.md: every crate's dependencies point down, the
    /// relayer's and the indexer's modules import down their tables, and no source files
    /// import each other around a circle.
    Floors,
    /// List the import circles between the source files of crates (default: the services,
    /// the libraries and the apps).
    Cycles {
        /// Crate directories (relative to the workspace root).
        dirs: Vec<std::path::PathBuf>,
    },
    /// Install what the tests need beyond Rust when it is missing (Debian's PostgreSQL,
    /// Python and Node; the npm packages of tools/; the pinned Python venv).
    Setup,
    /// Start this machine's PostgreSQL if needed (creating the cluster, the `bursar` role and
    /// the `bursar_test` database) and print the URL for `BURSAR_TEST_POSTGRES_URL`.
    Postgres,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Cmd::BuildContracts(args) => build_contracts::run(args),
        Cmd::Test(args) => test::run(args),
        Cmd::CheckContracts(args) => build_contracts::check(args),
        Cmd::Demo(args) => test::demo(args),
        Cmd::Bench(args) => bench::run(args),
        Cmd::Crash(args) => bench::crash(args),
        Cmd::Floors => floors::check(&workspace::root()),
        Cmd::Cycles { dirs } => {
            let default = [
                "relayer",
                "indexer",
                "crates/client",
                "crates/db",
                "crates/deploy",
                "crates/devnet",
                "apps/bursar",
                "apps/demo",
            ];
            let dirs = match dirs.is_empty() {
                true => default.iter().map(std::path::PathBuf::from).collect(),
                false => dirs.clone(),
            };
            cycles::find(&workspace::root(), &dirs).map(|found| {
                for circle in &found {
                    println!("{circle}");
                }
                println!("{} import circles", found.len());
            })
        }
        Cmd::Setup => setup::run(&workspace::root()).map(|env| {
            for (name, value) in env {
                println!("{name}={value}");
            }
        }),
        Cmd::Postgres => postgres::test_url().map(|url| println!("{url}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // `{:#}` prints the whole context chain on one line, without a backtrace.
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
