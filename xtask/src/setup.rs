//! What the tests need beyond Rust, installed when missing (`cargo xtask setup`, and the first
//! steps of `cargo xtask test`), so that the README's test command works on a fresh machine by
//! itself: Debian's Python, venv, PostgreSQL and Node; the npm packages of `tools/` (solc-js,
//! anvil, viem) from their lock files; a Python venv with the pinned web3.py and eth-account.
//! Each step does nothing when what it installs is there already.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::toolchain::{apt_install, which};

/// The Debian packages the tests use: PostgreSQL (both databases), Python with venv (the
/// web3.py and eth-account checks), Node and npm (solc-js, anvil, viem), Chromium (the pages'
/// browser tests).
const PACKAGES: &[&str] = &[
    "python3",
    "python3-venv",
    "postgresql",
    "nodejs",
    "npm",
    "chromium",
];

/// The folders whose npm packages tests run (tools, the pages' build, the SDK).
const NPM_TOOLS: &[&str] = &[
    "tools/solc",
    "tools/conformance",
    "tools/audit-check",
    "tools/evm-fixtures",
    "tools/x402",
    "tools/mcp",
    "tools/browser",
    "tools/erc8004",
    "crates/web",
    "sdk/typescript",
];

/// The pinned PyPI packages.
const REQUIREMENTS: &str = "tools/conformance/requirements.txt";

/// Installs what is missing; returns the environment the tests need (`BURSAR_PYTHON`).
pub(crate) fn run(root: &Path) -> Result<Vec<(String, String)>> {
    let missing: Vec<&str> = PACKAGES
        .iter()
        .copied()
        .filter(|p| !dpkg_installed(p))
        .collect();
    // A Node from elsewhere (nvm, a tarball) serves as well as Debian's.
    let missing: Vec<&str> = missing
        .into_iter()
        .filter(|p| !matches!(*p, "nodejs" | "npm") || which("npm").is_none())
        .collect();
    if !missing.is_empty() {
        eprintln!("==> setup: installing {}", missing.join(" "));
        apt_install(&missing)?;
    }
    for tool in NPM_TOOLS {
        npm_ci(&root.join(tool))?;
    }
    let python = python_venv(root)?;
    Ok(vec![(
        "BURSAR_PYTHON".into(),
        python.to_string_lossy().into_owned(),
    )])
}

fn dpkg_installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
}

/// `npm ci` in `dir` unless its `node_modules` already matches its lock file (npm writes its
/// own copy of the lock there).
fn npm_ci(dir: &Path) -> Result<()> {
    let lock = dir.join("package-lock.json");
    if !lock.exists() {
        return Ok(());
    }
    let installed = dir.join("node_modules/.package-lock.json");
    if installed.exists() && newer_or_same(&installed, &lock)? {
        return Ok(());
    }
    eprintln!("==> setup: npm ci --prefix {}", dir.display());
    let status = Command::new("npm")
        .args([
            "ci",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "--prefix",
        ])
        .arg(dir)
        .status()
        .context("running npm ci")?;
    if !status.success() {
        bail!("npm ci in {} failed", dir.display());
    }
    Ok(())
}

fn newer_or_same(a: &Path, b: &Path) -> Result<bool> {
    let modified = |p: &Path| -> Result<std::time::SystemTime> {
        Ok(std::fs::metadata(p)
            .with_context(|| p.display().to_string())?
            .modified()?)
    };
    Ok(modified(a)? >= modified(b)?)
}

/// The venv outside the clone (`$BURSAR_PYTHON`'s default), made and filled when missing or
/// when the requirements changed since.
fn python_venv(root: &Path) -> Result<PathBuf> {
    if let Some(python) = std::env::var_os("BURSAR_PYTHON") {
        return Ok(PathBuf::from(python));
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .context("neither XDG_CACHE_HOME nor HOME is set")?;
    let venv = cache.join("bursar/pyenv");
    let python = venv.join("bin/python");
    let requirements = root.join(REQUIREMENTS);
    let wanted = std::fs::read_to_string(&requirements)
        .with_context(|| requirements.display().to_string())?;
    let stamp = venv.join("bursar-requirements.txt");
    if python.exists() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(&wanted) {
        return Ok(python);
    }
    if !python.exists() {
        eprintln!("==> setup: python3 -m venv {}", venv.display());
        run_ok(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    }
    eprintln!("==> setup: pip install -r {REQUIREMENTS}");
    run_ok(
        Command::new(venv.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(&requirements),
    )?;
    std::fs::write(&stamp, wanted)?;
    Ok(python)
}

fn run_ok(cmd: &mut Command) -> Result<()> {
    let status = cmd
        .status()
        .with_context(|| format!("running {:?}", cmd.get_program()))?;
    if !status.success() {
        bail!("{:?} failed", cmd.get_program());
    }
    Ok(())
}
