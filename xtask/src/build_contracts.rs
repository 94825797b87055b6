//! `cargo xtask build-contracts`: build every contract crate to wasm, post-process, validate,
//! write `target/contracts/` and report sizes.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};

use crate::report::{self, Outcome, Row};
use crate::toolchain::{self, Preference, Toolchain, WASM_TARGET};
use crate::workspace::{self, CONTRACTS};
use crate::{prebuilt, wasm};

/// Env var overriding where the wasm builds go (CI keeps it outside the clone for caching).
pub(crate) const WASM_TARGET_DIR_ENV: &str = "BURSAR_WASM_TARGET_DIR";

#[derive(Args, Debug)]
pub(crate) struct BuildArgs {
    /// Build only these contracts (crate names, e.g. session-wallet); repeatable.
    #[arg(short = 'p', long = "contract", value_name = "CRATE")]
    pub contracts: Vec<String>,
    /// Which compiler to use.
    #[arg(long, value_enum, default_value_t = Preference::Auto)]
    pub toolchain: Preference,
    /// Never run apt-get; fail if the Debian toolchain or wasm-opt is missing.
    #[arg(long)]
    pub no_install: bool,
}

impl BuildArgs {
    /// These arguments as `build-contracts` takes them, for a child process.
    pub(crate) fn to_args(&self) -> Vec<String> {
        let mut args: Vec<String> = self
            .contracts
            .iter()
            .flat_map(|c| ["-p".to_string(), c.clone()])
            .collect();
        if let Some(toolchain) = self.toolchain.to_possible_value() {
            args.extend(["--toolchain".into(), toolchain.get_name().into()]);
        }
        if self.no_install {
            args.push("--no-install".into());
        }
        args
    }
}

/// `cargo xtask build-contracts`: builds into `target/contracts/`, and when every contract
/// was built by the pinned compiler, commits the result to [`prebuilt::DIR`] for the demo's
/// first run.
pub(crate) fn run(args: &BuildArgs) -> Result<()> {
    let out_dir = workspace::root().join("target").join("contracts");
    match build(args, &out_dir)? {
        Some(build) => build.record(),
        None => Ok(()),
    }
}

/// `cargo xtask check-contracts`: the contracts linted as deployed, then built into
/// `target/contracts-check/` (so that tests reading `target/contracts/` meanwhile are
/// undisturbed) and the committed artifacts checked against that build.
pub(crate) fn check(args: &BuildArgs) -> Result<()> {
    let root = workspace::root();
    // The workspace build turns on the contracts' `export-abi` feature (the ABI tools use
    // it), under which they allow `missing_docs` (`#[public]` generates an undocumented
    // `print_from_args`): lint them on their own, with the SDK's test feature so that
    // `#[entrypoint]` does not generate its (undocumented) `user_entrypoint` either. In a
    // target directory of their own, so that this runs beside a workspace build.
    let lint_dir = root.join("target").join("contracts-lint");
    let mut lint: Vec<&str> = vec!["clippy", "--lib", "--target-dir"];
    lint.push(lint_dir.to_str().context("target directory is not UTF-8")?);
    for c in CONTRACTS.iter().copied() {
        lint.extend(["-p", c]);
    }
    lint.extend([
        "--features",
        "stylus-sdk/stylus-test",
        "--",
        "-D",
        "warnings",
    ]);
    workspace::cargo("lints (contracts as deployed)", &lint, &[])?;
    let out_dir = root.join("target").join("contracts-check");
    match build(args, &out_dir)? {
        Some(build) => build.verify(),
        None => Ok(()),
    }
}

/// Builds the selected contracts into `out_dir`; answers the build when it is complete and
/// made by the pinned compiler (Debian's), the one [`prebuilt`] records.
fn build(args: &BuildArgs, out_dir: &Path) -> Result<Option<prebuilt::Build>> {
    let workspace = workspace::root();
    for name in &args.contracts {
        if !CONTRACTS.contains(&name.as_str()) {
            bail!(
                "unknown contract {name:?}; known contracts: {}",
                CONTRACTS.join(", ")
            );
        }
    }
    let selected: Vec<&str> = CONTRACTS
        .iter()
        .copied()
        .filter(|c| args.contracts.is_empty() || args.contracts.iter().any(|a| a == c))
        .collect();

    let members = workspace::members(&workspace)?;
    let mut to_build = Vec::new();
    for krate in selected {
        if members.contains_key(krate) {
            to_build.push(krate);
        } else {
            println!(
                "skipping {krate}: not a workspace member yet (add \"contracts/{krate}\" to \
                 [workspace].members in Cargo.toml)"
            );
        }
    }
    if to_build.is_empty() {
        println!("no contracts to build");
        return Ok(None);
    }
    let complete = to_build.len() == CONTRACTS.len();

    let toolchain = Toolchain::detect(args.toolchain, !args.no_install)?;
    if !toolchain.builds_std() {
        println!(
            "warning: {} is not nightly: std is not rebuilt with size flags and panics keep \
             their formatting machinery, so contracts will be larger than with nightly or \
             Debian rustc-web (--toolchain debian)",
            toolchain.describe()
        );
    }
    let wasm_opt_version = toolchain::ensure_wasm_opt(!args.no_install)?;

    let target_dir = wasm_target_dir(&workspace)?;
    fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;

    // Two lanes side by side, each with its own target directory (cargo locks one per build):
    // a contract's build ends in a single-threaded LTO link, so one lane leaves a core idle.
    // The second lane's directory sits inside the first, so whatever keeps one warm keeps both.
    let lanes: [Vec<&str>; 2] = [
        to_build.iter().copied().step_by(2).collect(),
        to_build.iter().copied().skip(1).step_by(2).collect(),
    ];
    let lane_dirs = [target_dir.clone(), target_dir.join("lane-2")];
    let mut built: Vec<Row> = std::thread::scope(|scope| {
        let running: Vec<_> = lanes
            .iter()
            .zip(&lane_dirs)
            .map(|(lane, dir)| {
                let (workspace, toolchain, wasm_opt, out) =
                    (&workspace, &toolchain, &wasm_opt_version, out_dir);
                scope.spawn(move || {
                    lane.iter()
                        .map(|krate| build_one(workspace, toolchain, wasm_opt, dir, out, krate))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        running
            .into_iter()
            .flat_map(|lane| lane.join().expect("a build lane panicked"))
            .collect()
    });
    // Reported in the contracts' order.
    built.sort_by_key(|r| to_build.iter().position(|k| *k == r.contract));
    let rows = built;

    println!();
    report::print_table(&rows);
    let sizes = out_dir.join("sizes.json");
    report::write_json(&sizes, &rows, &toolchain.describe(), &wasm_opt_version)?;
    println!("wrote {}", sizes.display());

    let failures: Vec<String> = rows
        .iter()
        .filter_map(|r| r.failure().map(|f| format!("  {}: {f}", r.contract)))
        .collect();
    if !failures.is_empty() {
        bail!(
            "{} contract(s) failed:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
    Ok(match (complete, &toolchain) {
        (true, Toolchain::Debian { .. }) => Some(prebuilt::Build {
            rustc: toolchain::debian_rustc_version()?,
            root: workspace,
            built: out_dir.to_path_buf(),
        }),
        _ => None,
    })
}

fn build_one(
    workspace: &Path,
    toolchain: &Toolchain,
    wasm_opt_version: &str,
    target_dir: &Path,
    out_dir: &Path,
    krate: &str,
) -> Row {
    let file = krate.replace('-', "_");
    println!(
        "building {krate} (wasm32, {})... [target dir {}]",
        toolchain.describe(),
        target_dir.display()
    );
    let status = toolchain
        .cargo_build(workspace, target_dir, krate)
        .status()
        .with_context(|| format!("failed to start cargo for {krate}"));
    let raw = target_dir
        .join(WASM_TARGET)
        .join("contract")
        .join(format!("{file}.wasm"));
    let outcome = match status {
        Err(e) => Outcome::BuildFailed(format!("{e:#}")),
        Ok(s) if !s.success() => Outcome::BuildFailed(format!("cargo build exited with {s}")),
        Ok(_) if !raw.exists() => Outcome::BuildFailed(format!(
            "cargo succeeded but {} is missing (is crate-type cdylib set?)",
            raw.display()
        )),
        Ok(_) => {
            println!(
                "optimizing {krate} ({wasm_opt_version}, {})...",
                wasm::WASM_OPT_FLAGS.join(" ")
            );
            let wasm_out = out_dir.join(format!("{file}.wasm"));
            let code_out = out_dir.join(format!("{file}.code"));
            match wasm::process(&raw, &wasm_out, &code_out) {
                Ok(p) => Outcome::Processed(p),
                Err(e) => Outcome::BuildFailed(format!("{e:#}")),
            }
        }
    };
    let row = Row {
        contract: krate.to_string(),
        file,
        outcome,
    };
    match &row.outcome {
        Outcome::Processed(p) => match &p.validation {
            Ok(info) => println!(
                "{krate}: passes activation checks ({} functions, {} host imports, {} initial \
                 pages); code {} bytes",
                info.functions,
                info.imports.len(),
                info.initial_pages,
                p.code_bytes()
            ),
            Err(e) => println!("{krate}: FAILS activation: {e}"),
        },
        Outcome::BuildFailed(e) => println!("{krate}: build failed: {e}"),
    }
    row
}

/// Where the wasm32 cargo builds go: `$BURSAR_WASM_TARGET_DIR` or `target/wasm`.
fn wasm_target_dir(workspace: &Path) -> Result<PathBuf> {
    Ok(match std::env::var_os(WASM_TARGET_DIR_ENV) {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                std::env::current_dir()?.join(dir)
            }
        }
        _ => workspace.join("target").join("wasm"),
    })
}
