//! `cargo xtask test`: everything CI checks, in the order that fails fastest; and
//! `cargo xtask demo`, the main job.

use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::build_contracts::{self, BuildArgs};
use crate::toolchain::Preference;
use crate::workspace::{self, CONTRACTS};
use crate::{postgres, prebuilt};

/// The floors of the dependencies, what the tests need installed ([`crate::setup`]),
/// formatting and lints, then the contracts as deployable WASM (which enforces the activation
/// rules and the code-size limit, and gives the devnet tests fresh artifacts), then every
/// workspace test, with a PostgreSQL server for those that run on both databases.
pub(crate) fn run(build: &BuildArgs) -> Result<()> {
    let root = workspace::root();
    // Which compiler checked this run (rust-toolchain.toml says why it is not pinned).
    let rustc = Command::new("rustc").arg("--version").output();
    if let Ok(out) = rustc {
        eprintln!(
            "==> toolchain: {}",
            String::from_utf8_lossy(&out.stdout).trim()
        );
    }
    crate::floors::check(&root)?;
    let started = std::time::Instant::now();
    let mut env = crate::setup::run(&root)?;
    eprintln!("==> setup: {:.0?}", started.elapsed());
    cargo("format", &["fmt", "--all", "--", "--check"])?;
    cargo(
        "lints",
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
    )?;
    // The workspace build turns on the contracts' `export-abi` feature (the ABI tools use it),
    // under which they allow `missing_docs` (`#[public]` generates an undocumented
    // `print_from_args`): lint them again on their own, with the SDK's test feature so that
    // `#[entrypoint]` does not generate its (undocumented) `user_entrypoint` either.
    let mut contracts = vec!["clippy", "--lib"];
    for c in CONTRACTS.iter().copied() {
        contracts.extend(["-p", c]);
    }
    contracts.extend([
        "--features",
        "stylus-sdk/stylus-test",
        "--",
        "-D",
        "warnings",
    ]);
    cargo("lints (contracts as deployed)", &contracts)?;
    eprintln!("==> contracts: build-contracts, then the committed artifacts checked against it");
    let started = std::time::Instant::now();
    build_contracts::run_and_verify(build)?;
    eprintln!("==> contracts: {:.0?}", started.elapsed());
    env.push((postgres::URL_VAR.into(), postgres::test_url()?));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    cargo_with("tests", &["test", "--workspace"], &env)
}

/// Deploys the committed contracts ([`prebuilt`]) when they were built from these sources, or
/// builds them and, beside them, the `bursar` binary; then runs the demonstration.
/// Side by side because the contracts' build leaves a core idle much of the time (std for
/// wasm32 is a chain of crates, and each contract links alone with one codegen unit); the
/// binary's build runs at a lower priority, so the contracts — the longer path — only lend it
/// what they leave idle. The README gives the figures.
pub(crate) fn demo(build: &BuildArgs) -> Result<()> {
    let root = workspace::root();
    let defaults = build.contracts.is_empty() && build.toolchain == Preference::Auto;
    if defaults && prebuilt::install(&root, &root.join("target").join("contracts"))? {
        return cargo("demo", &["run", "-p", "bursar", "--", "demo"]);
    }
    eprintln!("==> demo: cargo build -p bursar, beside the contracts");
    let mut binary = Command::new("nice")
        .args(["-n", "10"])
        .arg(env!("CARGO"))
        .args(["build", "--quiet", "-p", "bursar"])
        .spawn()
        .context("running nice cargo build")?;
    eprintln!("==> contracts: build-contracts");
    let contracts = build_contracts::run(build);
    let built = binary.wait().context("waiting for cargo build")?;
    contracts?;
    if !built.success() {
        bail!("building bursar failed (cargo build -p bursar)");
    }
    cargo("demo", &["run", "--quiet", "-p", "bursar", "--", "demo"])
}

fn cargo(step: &str, args: &[&str]) -> Result<()> {
    cargo_with(step, args, &[])
}

pub(crate) fn cargo_with(step: &str, args: &[&str], env: &[(&str, &str)]) -> Result<()> {
    eprintln!("==> {step}: cargo {}", args.join(" "));
    let started = std::time::Instant::now();
    let status = Command::new(env!("CARGO"))
        .args(args)
        .envs(env.iter().copied())
        .status()
        .with_context(|| format!("running cargo {}", args[0]))?;
    // Each step's time, so a slow CI run says where its minutes went.
    eprintln!("==> {step}: {:.0?}", started.elapsed());
    if !status.success() {
        bail!("{step} failed (cargo {})", args.join(" "));
    }
    Ok(())
}
