//! `cargo xtask test`: everything CI checks, in the order that fails fastest.

use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::build_contracts::{self, BuildArgs};

/// Formatting, lints, every workspace test, then the contracts as deployable WASM (which
/// enforces the activation rules and the code-size limit).
pub fn run(build: &BuildArgs) -> Result<()> {
    let steps: [(&str, &[&str]); 3] = [
        ("format", &["fmt", "--all", "--", "--check"]),
        (
            "lints",
            &[
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ],
        ),
        ("tests", &["test", "--workspace"]),
    ];
    for (name, args) in steps {
        eprintln!("==> {name}: cargo {}", args.join(" "));
        let status = Command::new(env!("CARGO"))
            .args(args)
            .status()
            .with_context(|| format!("running cargo {}", args[0]))?;
        if !status.success() {
            bail!("{name} failed (cargo {})", args.join(" "));
        }
    }
    eprintln!("==> contracts: build-contracts");
    build_contracts::run(build)
}
