//! Solidity compiled by the repository's solc-js (`tools/solc`, pinned, installed by
//! `cargo xtask setup`), once per test run and file.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

use serde_json::{json, Value};

/// One compiled contract.
#[derive(Clone, Debug)]
pub(crate) struct Artifact {
    /// Creation code (constructor arguments are appended to it).
    pub initcode: Vec<u8>,
    /// The code a deployment leaves.
    pub runtime: Vec<u8>,
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The contracts of `tests/evm/<file>`, by name, compiled for Cancun with the optimizer on.
pub(crate) fn contracts(file: &str) -> HashMap<String, Artifact> {
    static CACHE: OnceLock<Mutex<HashMap<String, HashMap<String, Artifact>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(found) = cache.lock().unwrap().get(file) {
        return found.clone();
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/evm")
        .join(file);
    let source =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let compiled = compile(&json!({ file: { "content": source } }));
    cache
        .lock()
        .unwrap()
        .insert(file.to_string(), compiled.clone());
    compiled
}

/// Compiles standard-JSON `sources`; every contract of every source, by name.
pub(crate) fn compile(sources: &Value) -> HashMap<String, Artifact> {
    let input = json!({
        "language": "Solidity",
        "sources": sources,
        "settings": {
            "evmVersion": "cancun",
            "optimizer": { "enabled": true, "runs": 200 },
            "outputSelection": { "*": { "*": ["evm.bytecode.object", "evm.deployedBytecode.object"] } }
        }
    });
    let solc = workspace().join("tools/solc/solc");
    let mut child = Command::new("node")
        .arg(&solc)
        .arg("--standard-json")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "run {}: {e} (cargo xtask setup installs it)",
                solc.display()
            )
        });
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "solc-js failed (run cargo xtask setup)"
    );
    let output: Value = serde_json::from_slice(&out.stdout).expect("solc's standard JSON");
    let errors: Vec<&Value> = output["errors"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["severity"] == "error")
        .collect();
    assert!(errors.is_empty(), "solc errors: {errors:#?}");
    let mut found = HashMap::new();
    for file in output["contracts"].as_object().expect("contracts").values() {
        for (name, c) in file.as_object().unwrap() {
            let hex = |p: &str| {
                alloy_primitives::hex::decode(c["evm"][p]["object"].as_str().unwrap()).unwrap()
            };
            found.insert(
                name.clone(),
                Artifact {
                    initcode: hex("bytecode"),
                    runtime: hex("deployedBytecode"),
                },
            );
        }
    }
    found
}
