//! Finding (or installing) a compiler that can build `wasm32-unknown-unknown`, and `wasm-opt`.
//!
//! Preference order in `auto` mode:
//! 1. a rustup toolchain that has the `wasm32-unknown-unknown` target installed (nightly first:
//!    it can rebuild std for size);
//! 2. Debian's `rustc-web` (+ `cargo-web`, `rust-web-src`, `lld-22`), which ships the wasm32
//!    target and std sources; we rebuild std with `-Zbuild-std` (`RUSTC_BOOTSTRAP=1`).
//!    Missing packages are installed with apt-get.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use clap::ValueEnum;

pub(crate) const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// Flags every contract build gets (they also reach build-std's std/core/alloc).
const BASE_RUSTFLAGS: &str =
    "-C target-cpu=mvp -C target-feature=+bulk-memory -C link-arg=-zstack-size=32768";
/// Extra flags that need a nightly-capable compiler: abort without any panic machinery, and
/// keep no source paths (which would differ between builders and change the code hash) nor
/// `Debug` formatting in the binary.
const UNSTABLE_RUSTFLAGS: &str =
    "-Zunstable-options -Cpanic=immediate-abort -Zlocation-detail=none -Zfmt-debug=none";
/// The `std` crates rebuilt with `-Zbuild-std`.
const BUILD_STD: &str = "-Zbuild-std=core,alloc,std,panic_abort";

const DEBIAN_RUSTC: &str = "/usr/bin/rustc";
const DEBIAN_CARGO: &str = "/usr/bin/cargo";
const DEBIAN_RUST_SRC: &str = "/usr/lib/rustlib/src/rust";
const DEBIAN_LLD: &str = "lld-22";
const DEBIAN_PACKAGES: &[&str] = &[
    "rustc-web",
    "cargo-web",
    "rust-web-src",
    "lld-22",
    "binaryen",
];

/// Which toolchain family to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Preference {
    /// rustup if a toolchain has the wasm32 target installed, else Debian rustc-web.
    Auto,
    /// Only a rustup toolchain with the wasm32 target.
    Rustup,
    /// Only Debian's rustc-web (installed with apt-get when missing).
    Debian,
}

/// A compiler able to produce contract wasm.
#[derive(Clone, Debug)]
pub(crate) enum Toolchain {
    Rustup { name: String, nightly: bool },
    Debian { version: String },
}

impl Toolchain {
    /// Picks a toolchain, installing Debian packages when needed and `install` allows it.
    pub(crate) fn detect(preference: Preference, install: bool) -> Result<Self> {
        if preference != Preference::Debian {
            match find_rustup_wasm_toolchain()? {
                Some(toolchain) => return Ok(toolchain),
                None if preference == Preference::Rustup => bail!(
                    "no rustup toolchain has the {WASM_TARGET} target installed \
                     (try `rustup target add {WASM_TARGET}`, or use --toolchain debian)"
                ),
                None => {}
            }
        }
        ensure_debian_toolchain(install)?;
        let version = command_output(Command::new(DEBIAN_RUSTC).arg("--version"))?;
        // "rustc 1.96.0 (ac68faa20 2026-05-25) (built from a source tarball)" -> "1.96"
        let version = version
            .split_whitespace()
            .nth(1)
            .map(|v| v.splitn(3, '.').take(2).collect::<Vec<_>>().join("."))
            .unwrap_or_else(|| "?".into());
        Ok(Toolchain::Debian { version })
    }

    /// Short description for progress lines, e.g. `debian rustc-web 1.96`.
    pub(crate) fn describe(&self) -> String {
        match self {
            Toolchain::Rustup { name, .. } => format!("rustup {name}"),
            Toolchain::Debian { version } => format!("debian rustc-web {version}"),
        }
    }

    /// Whether this toolchain rebuilds std with size flags (`-Zbuild-std`, immediate abort).
    pub(crate) fn builds_std(&self) -> bool {
        match self {
            Toolchain::Rustup { nightly, .. } => *nightly,
            Toolchain::Debian { .. } => true,
        }
    }

    /// `cargo rustc` for one contract crate's cdylib, into `target_dir`.
    ///
    /// Contract crates declare `crate-type = ["lib", "cdylib"]` (the rlib serves native tests and
    /// other crates). Building only the cdylib matters for size: when rustc also emits the rlib,
    /// generic instances are shared/exported and LTO keeps much more of them (session-wallet:
    /// 352 vs 162 functions, 20,594 vs ~18,950 bytes compressed).
    pub(crate) fn cargo_build(&self, workspace: &Path, target_dir: &Path, krate: &str) -> Command {
        let mut cmd = match self {
            Toolchain::Rustup { name, .. } => {
                let mut cmd = Command::new("cargo");
                cmd.arg(format!("+{name}"));
                // Let the rustup proxy pick the toolchain's own rustc.
                cmd.env_remove("RUSTC").env_remove("RUSTUP_TOOLCHAIN");
                cmd
            }
            Toolchain::Debian { .. } => {
                let mut cmd = Command::new(DEBIAN_CARGO);
                // Only this child sees the Debian compiler and the bootstrap escape hatch.
                cmd.env("RUSTC", DEBIAN_RUSTC).env("RUSTC_BOOTSTRAP", "1");
                cmd
            }
        };
        let rustflags = if self.builds_std() {
            format!("{BASE_RUSTFLAGS} {UNSTABLE_RUSTFLAGS}")
        } else {
            BASE_RUSTFLAGS.to_string()
        };
        cmd.current_dir(workspace)
            // Outer flags would take precedence over the target-specific ones below.
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("CARGO_BUILD_RUSTFLAGS")
            .env_remove("CARGO_TARGET_DIR")
            .env("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS", rustflags)
            .args(["rustc", "--profile", "contract", "--target", WASM_TARGET]);
        if self.builds_std() {
            cmd.arg(BUILD_STD);
        }
        cmd.args([
            "-p",
            krate,
            "--lib",
            "--crate-type",
            "cdylib",
            "--target-dir",
        ])
        .arg(target_dir);
        cmd
    }
}

/// First rustup toolchain (nightly preferred) with the wasm32 target installed.
fn find_rustup_wasm_toolchain() -> Result<Option<Toolchain>> {
    let Ok(list) = command_output(Command::new("rustup").args(["toolchain", "list"])) else {
        return Ok(None); // no rustup
    };
    let mut found = Vec::new();
    for name in list.lines().filter_map(|l| l.split_whitespace().next()) {
        let targets = command_output(Command::new("rustup").args([
            "target",
            "list",
            "--installed",
            "--toolchain",
            name,
        ]))
        .unwrap_or_default();
        if targets.lines().any(|t| t.trim() == WASM_TARGET) {
            let version = command_output(Command::new("rustup").args(["run", name, "rustc", "-V"]))
                .unwrap_or_default();
            let nightly = name.starts_with("nightly") || version.contains("nightly");
            found.push(Toolchain::Rustup {
                name: name.to_string(),
                nightly,
            });
        }
    }
    found.sort_by_key(|t| !matches!(t, Toolchain::Rustup { nightly: true, .. }));
    Ok(found.into_iter().next())
}

fn missing_debian_parts() -> Vec<&'static str> {
    let mut missing = Vec::new();
    if !Path::new(DEBIAN_RUSTC).exists() {
        missing.push(DEBIAN_RUSTC);
    }
    if !Path::new(DEBIAN_CARGO).exists() {
        missing.push(DEBIAN_CARGO);
    }
    if !Path::new(DEBIAN_RUST_SRC).is_dir() {
        missing.push(DEBIAN_RUST_SRC);
    }
    if which(DEBIAN_LLD).is_none() {
        missing.push(DEBIAN_LLD);
    }
    missing
}

fn ensure_debian_toolchain(install: bool) -> Result<()> {
    let missing = missing_debian_parts();
    if missing.is_empty() {
        return Ok(());
    }
    let what = missing.join(", ");
    if !install {
        bail!("Debian Rust toolchain incomplete (missing {what}) and --no-install was given");
    }
    println!("Debian Rust toolchain incomplete (missing {what})");
    apt_install(DEBIAN_PACKAGES)?;
    let still = missing_debian_parts();
    if !still.is_empty() {
        bail!(
            "still missing after apt-get install: {} (packages: {})",
            still.join(", "),
            DEBIAN_PACKAGES.join(" ")
        );
    }
    Ok(())
}

/// Debian's compiler's whole `--version` line (the package's updates keep its short version).
pub(crate) fn debian_rustc_version() -> Result<String> {
    Ok(command_output(Command::new(DEBIAN_RUSTC).arg("--version"))?
        .trim()
        .to_string())
}

/// Makes sure `wasm-opt` (binaryen) runs; returns its version line.
pub(crate) fn ensure_wasm_opt(install: bool) -> Result<String> {
    if let Ok(version) = command_output(Command::new("wasm-opt").arg("--version")) {
        return Ok(version.trim().to_string());
    }
    if !install {
        bail!("wasm-opt (binaryen) not found and --no-install was given");
    }
    println!("wasm-opt not found");
    apt_install(&["binaryen"])?;
    command_output(Command::new("wasm-opt").arg("--version"))
        .map(|v| v.trim().to_string())
        .context("wasm-opt still not runnable after installing binaryen")
}

/// `apt-get install -y <packages>` (via sudo when not root); runs `apt-get update` and retries
/// once if the first attempt fails (stale or missing package lists).
pub(crate) fn apt_install(packages: &[&str]) -> Result<()> {
    let sudo = !is_root() && which("sudo").is_some();
    let apt = |args: &[&str]| -> Result<bool> {
        let mut cmd = if sudo {
            let mut cmd = Command::new("sudo");
            cmd.arg("apt-get");
            cmd
        } else {
            Command::new("apt-get")
        };
        cmd.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        println!(
            "running: {}apt-get {}",
            if sudo { "sudo " } else { "" },
            args.join(" ")
        );
        Ok(cmd.status().context("failed to run apt-get")?.success())
    };
    let mut install = vec!["install", "-y"];
    install.extend_from_slice(packages);
    if apt(&install)? {
        return Ok(());
    }
    println!("apt-get install failed; refreshing package lists and retrying");
    if apt(&["update"])? && apt(&install)? {
        return Ok(());
    }
    bail!(
        "could not install {} with apt-get (need root or sudo)",
        packages.join(" ")
    )
}

fn is_root() -> bool {
    command_output(Command::new("id").arg("-u")).is_ok_and(|uid| uid.trim() == "0")
}

/// Full path of `program` on PATH.
pub(crate) fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// Runs `cmd`, returning stdout; errors if it cannot start or exits non-zero.
pub(crate) fn command_output(cmd: &mut Command) -> Result<String> {
    let out = cmd
        .output()
        .with_context(|| format!("failed to run {:?}", cmd.get_program()))?;
    if !out.status.success() {
        bail!(
            "{:?} failed: {}",
            cmd.get_program(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
