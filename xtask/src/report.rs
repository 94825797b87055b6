//! The size table and `target/contracts/sizes.json`.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::json;
use stylus_activation::MAX_CODE_SIZE;

use crate::wasm::Processed;

/// The project's own target for compressed contract size (warn above, don't fail).
pub(crate) const TARGET_CODE_SIZE: usize = 16 * 1024;

pub(crate) enum Outcome {
    Processed(Processed),
    BuildFailed(String),
}

pub(crate) struct Row {
    /// Crate name, e.g. `session-wallet`.
    pub contract: String,
    /// Artifact stem, e.g. `session_wallet`.
    pub file: String,
    pub outcome: Outcome,
}

impl Row {
    /// Why this contract makes the command fail, if it does.
    pub(crate) fn failure(&self) -> Option<String> {
        match &self.outcome {
            Outcome::BuildFailed(e) => Some(format!("build failed: {e}")),
            Outcome::Processed(p) => match &p.validation {
                Err(e) => Some(format!("activation would fail: {e}")),
                Ok(_) if !p.fits() => Some(format!(
                    "compressed code {} bytes (EFF00000 prefix included) exceeds the {} byte \
                     max code size",
                    p.code_bytes(),
                    MAX_CODE_SIZE
                )),
                Ok(_) => None,
            },
        }
    }

    fn status(&self) -> String {
        match &self.outcome {
            Outcome::BuildFailed(_) => "BUILD FAILED".into(),
            Outcome::Processed(p) => match &p.validation {
                Err(_) => "INVALID".into(),
                Ok(_) if !p.fits() => "TOO LARGE".into(),
                Ok(_) if p.code_bytes() > TARGET_CODE_SIZE => "ok (above 16 KiB target)".into(),
                Ok(_) => "ok".into(),
            },
        }
    }
}

pub(crate) fn print_table(rows: &[Row]) {
    println!(
        "{:<24} {:>12} {:>12} {:>11}  status",
        "contract",
        "wasm bytes",
        "compressed",
        format!("% of {MAX_CODE_SIZE}")
    );
    for row in rows {
        match &row.outcome {
            Outcome::Processed(p) => println!(
                "{:<24} {:>12} {:>12} {:>10.1}%  {}",
                row.contract,
                p.wasm.len(),
                p.code_bytes(),
                p.percent_of_limit(),
                row.status()
            ),
            Outcome::BuildFailed(_) => println!(
                "{:<24} {:>12} {:>12} {:>11}  {}",
                row.contract,
                "-",
                "-",
                "-",
                row.status()
            ),
        }
    }
    println!(
        "(wasm = after wasm-opt and custom-section stripping; compressed = EFF00000 + brotli q11 \
         w22, the on-chain code)"
    );
    for row in rows {
        if let Outcome::Processed(p) = &row.outcome {
            if p.code_bytes() > TARGET_CODE_SIZE && p.fits() {
                println!(
                    "warning: {} is {} bytes compressed, above the project's {} byte (16 KiB) \
                     target",
                    row.contract,
                    p.code_bytes(),
                    TARGET_CODE_SIZE
                );
            }
        }
    }
}

pub(crate) fn write_json(path: &Path, rows: &[Row], toolchain: &str, wasm_opt: &str) -> Result<()> {
    let contracts: Vec<_> = rows
        .iter()
        .map(|row| match &row.outcome {
            Outcome::Processed(p) => {
                let info = p.validation.as_ref().ok();
                json!({
                    "contract": row.contract,
                    "wasm_file": format!("{}.wasm", row.file),
                    "code_file": (p.validation.is_ok() && p.fits())
                        .then(|| format!("{}.code", row.file)),
                    "raw_wasm_bytes": p.raw_bytes,
                    "wasm_bytes": p.wasm.len(),
                    "compressed_bytes": p.code_bytes(),
                    "percent_of_limit": (p.percent_of_limit() * 10.0).round() / 10.0,
                    "fits": p.fits(),
                    "valid": p.validation.is_ok(),
                    "error": row.failure(),
                    "functions": info.map(|i| i.functions),
                    "initial_pages": info.map(|i| i.initial_pages),
                    "host_imports": info.map(|i| i.imports.iter().map(|f| f.name).collect::<Vec<_>>()),
                })
            }
            Outcome::BuildFailed(_) => json!({
                "contract": row.contract,
                "error": row.failure(),
            }),
        })
        .collect();
    let doc = json!({
        "max_code_size": MAX_CODE_SIZE,
        "target_code_size": TARGET_CODE_SIZE,
        "toolchain": toolchain,
        "wasm_opt": wasm_opt,
        "contracts": contracts,
    });
    let text = serde_json::to_string_pretty(&doc)? + "\n";
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use stylus_activation::ActivationError;

    fn row(validation: Result<(), ActivationError>, code_len: usize) -> Row {
        let wasm = wat_like_minimal();
        let info = stylus_activation::validate(&wasm).unwrap();
        Row {
            contract: "session-wallet".into(),
            file: "session_wallet".into(),
            outcome: Outcome::Processed(Processed {
                raw_bytes: 100,
                wasm,
                code: vec![0; code_len],
                validation: validation.map(|()| info),
            }),
        }
    }

    fn wat_like_minimal() -> Vec<u8> {
        wat::parse_str(
            r#"(module (memory (export "memory") 1 1)
                (func (export "user_entrypoint") (param i32) (result i32) i32.const 0))"#,
        )
        .unwrap()
    }

    #[test]
    fn ok_rows_do_not_fail() {
        assert_eq!(row(Ok(()), 20_000).failure(), None);
        assert_eq!(row(Ok(()), 20_000).status(), "ok (above 16 KiB target)");
        assert_eq!(row(Ok(()), 10_000).status(), "ok");
    }

    #[test]
    fn invalid_and_oversized_rows_name_the_problem() {
        let invalid = row(Err(ActivationError::StartFunction), 10_000);
        assert_eq!(
            invalid.failure().unwrap(),
            "activation would fail: start function not allowed"
        );
        let big = row(Ok(()), MAX_CODE_SIZE + 1);
        assert!(big.failure().unwrap().contains("24577 bytes"));
        assert!(big.failure().unwrap().contains("24576 byte max code size"));
        assert_eq!(big.status(), "TOO LARGE");
    }

    #[test]
    fn json_has_the_figures() {
        let dir = std::env::temp_dir().join(format!("xtask-report-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("sizes.json");
        write_json(&path, &[row(Ok(()), 12_288)], "tc", "wasm-opt version 108").unwrap();
        let doc: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        let c = &doc["contracts"][0];
        assert_eq!(c["contract"], "session-wallet");
        assert_eq!(c["compressed_bytes"], 12_288);
        assert_eq!(c["percent_of_limit"], 50.0);
        assert_eq!(c["code_file"], "session_wallet.code");
        assert_eq!(doc["max_code_size"], 24_576);
        fs::remove_dir_all(&dir).unwrap();
    }
}
