//! `bursar-abi`: keeps the committed Solidity interfaces current and compiles them.
//!
//! ```text
//! cargo run -p bursar-abi -- export            # rewrite contracts/abi/solidity/*.sol
//! cargo run -p bursar-abi -- export --check    # fail if any committed file is stale
//! cargo run -p bursar-abi -- json              # rewrite contracts/abi/json/*.json (bindings)
//! cargo run -p bursar-abi -- json --check      # fail if any committed JSON ABI is stale
//! cargo run -p bursar-abi -- compile [--out target/contracts/abi]
//! ```

use std::{
    fs,
    path::{Path, PathBuf},
    process::ExitCode,
};

use bursar_abi::{repo_root, CONTRACTS};

const USAGE: &str = "\
usage: bursar-abi export [--check]
       bursar-abi json [--check]
       bursar-abi compile [--out DIR]

  export     rewrite contracts/abi/solidity/<Interface>.sol from the contracts' export-abi
             (--check: change nothing, fail if a committed file differs)
  json       rewrite contracts/abi/json/<Interface>.json: the full ABI (with events) of the
             sol! bindings, compiled with solc (--check: change nothing, fail if stale)
  compile    compile the committed interfaces with solc (tools/solc, solc-js) and write
             standard JSON ABI artifacts DIR/<Interface>.json
             (default DIR: target/contracts/abi under the repository root)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["export"] => export(false),
        ["export", "--check"] => export(true),
        ["json"] => json(false),
        ["json", "--check"] => json(true),
        ["compile"] => compile(&repo_root().join("target").join("contracts").join("abi")),
        ["compile", "--out", dir] => compile(Path::new(dir)),
        ["compile", out] if out.starts_with("--out=") => compile(Path::new(&out["--out=".len()..])),
        ["-h" | "--help" | "help"] => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("bursar-abi: {message}");
            ExitCode::FAILURE
        }
    }
}

fn export(check: bool) -> Result<(), String> {
    let mut stale = Vec::new();
    for contract in &CONTRACTS {
        let path = contract.committed_path();
        let exported = contract.export();
        if fs::read_to_string(&path).ok().as_deref() == Some(exported.as_str()) {
            println!("unchanged {}", relative(&path));
            continue;
        }
        if check {
            stale.push(relative(&path));
            continue;
        }
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        fs::write(&path, exported).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("wrote     {}", relative(&path));
    }
    if stale.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "out of date: {} (run `cargo run -p bursar-abi -- export`)",
            stale.join(", ")
        ))
    }
}

fn json(check: bool) -> Result<(), String> {
    let abis = bursar_abi::bindings::bindings_abis().map_err(|e| e.to_string())?;
    let dir = bursar_abi::bindings::json_dir();
    let mut stale = Vec::new();
    for (name, abi) in &abis {
        let path = dir.join(format!("{name}.json"));
        let text = bursar_abi::bindings::to_json(abi);
        if fs::read_to_string(&path).ok().as_deref() == Some(text.as_str()) {
            println!("unchanged {}", relative(&path));
        } else if check {
            stale.push(relative(&path));
        } else {
            fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
            println!("wrote     {}", relative(&path));
        }
    }
    if stale.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "out of date: {} (run `cargo run -p bursar-abi -- json`)",
            stale.join(", ")
        ))
    }
}

fn compile(out_dir: &Path) -> Result<(), String> {
    let abis =
        bursar_abi::compile(&bursar_abi::committed_paths(), out_dir).map_err(|e| e.to_string())?;
    for name in abis.keys() {
        println!("wrote {}", out_dir.join(format!("{name}.json")).display());
    }
    Ok(())
}

fn relative(path: &Path) -> String {
    let root = repo_root();
    path.strip_prefix(&root)
        .map(PathBuf::from)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}
