//! `cargo xtask test`: everything CI checks, in the order that fails fastest; and
//! `cargo xtask demo`, the main job.

use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::build_contracts::{self, BuildArgs};
use crate::toolchain::Preference;
use crate::workspace;
use crate::{lanes, postgres, prebuilt};

/// The floors of the dependencies; what the tests need installed ([`crate::setup`]) beside
/// formatting and lints; then every workspace test, in two lanes ([`lanes`]; with a PostgreSQL
/// server for those that run on both databases) beside `check-contracts`: the contracts linted as deployed, built as
/// deployable WASM (which enforces the activation rules and the code-size limit) and the
/// committed artifacts checked against that build.
///
/// Side by side because each pair leaves the machine idle where the other works: setup waits on
/// downloads while clippy computes; the contracts' build is a chain of crates ending in
/// single-threaded links, and the running tests wait on chains, browsers and installs. The
/// tests deploy the committed artifacts (the contracts' check proves them equal to the sources'
/// build). The contracts start once the tests are built — beside the tests' build, which keeps
/// both cores busy, they only slowed it — and run at a lower priority.
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
    let setup = std::thread::spawn({
        let root = root.clone();
        move || {
            let env = crate::setup::run(&root);
            eprintln!("==> setup: {:.0?}", started.elapsed());
            env
        }
    });
    let lints = cargo("format", &["fmt", "--all", "--", "--check"]).and_then(|()| {
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
        )
    });
    let mut env = setup.join().expect("setup panicked")?;
    lints?;

    if !prebuilt::install(&root, &root.join("target").join("contracts"))? {
        // Stale artifacts fail the check (which rewrites them for the commit); no test runs
        // on contracts that are not what the sources build.
        build_contracts::check(build)?;
        bail!("{} is older than the contracts' sources", prebuilt::DIR);
    }
    env.push((postgres::URL_VAR.into(), postgres::test_url()?));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let tests = lanes::build(&env)?;

    let log = root.join("target").join("check-contracts.log");
    eprintln!(
        "==> contracts: check-contracts beside the tests (its output: {})",
        log.display()
    );
    let started = std::time::Instant::now();
    let output = std::fs::File::create(&log)?;
    let mut contracts = Command::new("nice")
        .args(["-n", "10"])
        .arg(std::env::current_exe().context("finding xtask's executable")?)
        .arg("check-contracts")
        .args(build.to_args())
        .stdout(output.try_clone()?)
        .stderr(output)
        .spawn()
        .context("starting check-contracts")?;

    let tests = lanes::run(tests, &env);

    let checked = contracts.wait().context("waiting for check-contracts")?;
    eprintln!(
        "==> contracts (check-contracts) finished after {:.0?}:",
        started.elapsed()
    );
    eprint!("{}", std::fs::read_to_string(&log).unwrap_or_default());
    tests?;
    if !checked.success() {
        bail!("check-contracts failed (its output is above)");
    }
    Ok(())
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
    workspace::cargo(step, args, &[])
}
