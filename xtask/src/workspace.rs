//! The workspace as the tasks see it: its root, its members, its contracts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::toolchain;

/// Contract crates, in build order. Crates that are not workspace members yet are skipped.
pub(crate) const CONTRACTS: &[&str] = &[
    "session-wallet",
    "session-wallet-extension",
    "session-gateway",
    "counterparty-registry",
    "receipt-registry",
    "identity-registry",
    "reputation-registry",
    "test-token",
];

/// The workspace root (parent of the xtask crate).
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives inside the workspace")
        .to_path_buf()
}

/// The workspace members' package names and directories (`cargo metadata --no-deps`).
pub(crate) fn members(workspace: &Path) -> Result<BTreeMap<String, PathBuf>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = toolchain::command_output(Command::new(cargo).current_dir(workspace).args([
        "metadata",
        "--no-deps",
        "--format-version",
        "1",
    ]))
    .context("listing workspace members")?;
    let meta: serde_json::Value =
        serde_json::from_str(&out).context("parsing cargo metadata output")?;
    let packages = meta["packages"]
        .as_array()
        .context("cargo metadata: no packages array")?;
    Ok(packages
        .iter()
        .filter_map(|p| {
            let name = p["name"].as_str()?;
            let dir = Path::new(p["manifest_path"].as_str()?).parent()?;
            Some((name.to_string(), dir.to_path_buf()))
        })
        .collect())
}

/// Runs `cargo args…` with `env` as one named step of a run, printing its time.
pub(crate) fn cargo(step: &str, args: &[&str], env: &[(&str, &str)]) -> Result<()> {
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
