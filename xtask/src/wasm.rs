//! Post-processing of a built contract: wasm-opt, custom-section stripping, activation checks,
//! brotli compression and the code-size limit.

use std::fs;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};
use stylus_activation::{ActivationError, ModuleInfo, MAX_CODE_SIZE};

/// binaryen flags; all accepted by wasm-opt 108 (Debian bookworm/trixie) and newer.
pub(crate) const WASM_OPT_FLAGS: &[&str] = &[
    "-Oz",
    "--enable-bulk-memory",
    "--strip-debug",
    "--strip-producers",
];

/// One processed contract.
pub(crate) struct Processed {
    /// Size of the linker output.
    pub raw_bytes: usize,
    /// The optimized, stripped wasm (what gets compressed and activated).
    pub wasm: Vec<u8>,
    /// `EF F0 00 00 || brotli(wasm)`.
    pub code: Vec<u8>,
    /// Activation check result.
    pub validation: Result<ModuleInfo, ActivationError>,
}

impl Processed {
    /// Compressed size, prefix included.
    pub(crate) fn code_bytes(&self) -> usize {
        self.code.len()
    }

    pub(crate) fn percent_of_limit(&self) -> f64 {
        self.code.len() as f64 * 100.0 / MAX_CODE_SIZE as f64
    }

    pub(crate) fn fits(&self) -> bool {
        stylus_activation::check_code_size(&self.code).is_ok()
    }
}

/// Runs `wasm-opt` on `input` writing `output`.
pub(crate) fn wasm_opt(input: &Path, output: &Path) -> Result<()> {
    let status = Command::new("wasm-opt")
        .args(WASM_OPT_FLAGS)
        .arg(input)
        .arg("-o")
        .arg(output)
        .status()
        .context("failed to run wasm-opt")?;
    if !status.success() {
        bail!(
            "wasm-opt {} failed on {}",
            WASM_OPT_FLAGS.join(" "),
            input.display()
        );
    }
    Ok(())
}

/// Optimizes `raw` into `wasm_out`, strips custom sections, validates and compresses.
/// Writes `wasm_out` (always, for inspection) and `code_out` (only when the contract is usable;
/// a stale one is removed otherwise).
pub(crate) fn process(raw: &Path, wasm_out: &Path, code_out: &Path) -> Result<Processed> {
    let raw_bytes = fs::metadata(raw)
        .with_context(|| format!("reading {}", raw.display()))?
        .len() as usize;
    wasm_opt(raw, wasm_out)?;
    let optimized =
        fs::read(wasm_out).with_context(|| format!("reading {}", wasm_out.display()))?;
    let wasm = stylus_activation::strip_custom_sections(&optimized);
    fs::write(wasm_out, &wasm).with_context(|| format!("writing {}", wasm_out.display()))?;

    let validation = stylus_activation::validate(&wasm);
    let code = stylus_activation::contract_code(&wasm);
    let processed = Processed {
        raw_bytes,
        wasm,
        code,
        validation,
    };
    if processed.validation.is_ok() && processed.fits() {
        fs::write(code_out, &processed.code)
            .with_context(|| format!("writing {}", code_out.display()))?;
    } else if code_out.exists() {
        fs::remove_file(code_out).with_context(|| format!("removing {}", code_out.display()))?;
    }
    Ok(processed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-wasm-{name}-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// End to end through wasm-opt (binaryen must be installed, as cargo xtask setup does).
    #[test]
    fn process_reports_rule_and_withholds_code() {
        assert!(
            crate::toolchain::which("wasm-opt").is_some(),
            "wasm-opt (binaryen) is required for this test: run cargo xtask setup"
        );
        let dir = scratch("float");
        let raw = dir.join("raw.wasm");
        let wasm = wat::parse_str(
            r#"(module
                (import "vm_hooks" "pay_for_memory_grow" (func (param i32)))
                (memory (export "memory") 1)
                (func (export "user_entrypoint") (param i32) (result i32)
                    (i32.trunc_f64_s (f64.mul (f64.convert_i32_s (local.get 0)) (f64.const 1.5))))
                (@custom "junk" "0123456789"))"#,
        )
        .unwrap();
        fs::write(&raw, wasm).unwrap();
        let (wasm_out, code_out) = (dir.join("c.wasm"), dir.join("c.code"));
        fs::write(&code_out, b"stale").unwrap();

        let p = process(&raw, &wasm_out, &code_out).unwrap();
        let err = p.validation.as_ref().unwrap_err().to_string();
        assert!(err.starts_with("float instruction f64."), "{err}");
        assert!(!code_out.exists(), "stale .code must be removed");
        assert_eq!(fs::read(&wasm_out).unwrap(), p.wasm);
        assert!(!p.wasm.windows(4).any(|w| w == b"junk"));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn process_accepts_valid_program() {
        assert!(
            crate::toolchain::which("wasm-opt").is_some(),
            "wasm-opt (binaryen) is required for this test: run cargo xtask setup"
        );
        let dir = scratch("ok");
        let raw = dir.join("raw.wasm");
        let wasm = wat::parse_str(
            r#"(module
                (import "vm_hooks" "pay_for_memory_grow" (func (param i32)))
                (memory (export "memory") 1)
                (func (export "user_entrypoint") (param i32) (result i32)
                    ;; like the SDK entrypoint: keeps the import alive through wasm-opt
                    (call 0 (i32.const 0))
                    (local.get 0)))"#,
        )
        .unwrap();
        fs::write(&raw, wasm).unwrap();
        let (wasm_out, code_out) = (dir.join("c.wasm"), dir.join("c.code"));
        let p = process(&raw, &wasm_out, &code_out).unwrap();
        assert!(p.validation.is_ok(), "{:?}", p.validation);
        assert!(p.fits());
        assert_eq!(fs::read(&code_out).unwrap(), p.code);
        assert_eq!(&p.code[..4], &[0xEF, 0xF0, 0x00, 0x00]);
        fs::remove_dir_all(&dir).unwrap();
    }
}
