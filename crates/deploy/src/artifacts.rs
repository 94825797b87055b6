//! The built contracts: `target/contracts/<name>.code` (the on-chain code, `EFF00000 ||
//! brotli(wasm)`), checked against the Stylus rules before anything is sent.

use std::path::{Path, PathBuf};

use alloy_primitives::{keccak256, B256};
use serde::Deserialize;

/// Why the artifacts cannot be deployed.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// The `.code` file does not exist: the contracts have not been built.
    #[error("contract artifact {path} not found: deploy the committed ones with `--artifacts contracts/artifacts`, or build them with `cargo xtask build-contracts`")]
    Missing {
        /// The expected `<dir>/<name>.code`.
        path: PathBuf,
    },
    /// The `.code` file exists but could not be read.
    #[error("cannot read {path}: {reason}")]
    Read {
        /// The `.code` file.
        path: PathBuf,
        /// The I/O error.
        reason: String,
    },
    /// The on-chain code exceeds the Stylus code size limit.
    #[error("{name}: {size} bytes on chain, over the {limit}-byte Stylus limit")]
    TooLarge {
        /// The artifact stem.
        name: &'static str,
        /// Bytes of the on-chain (compressed, prefixed) code.
        size: usize,
        /// The limit in bytes (24,576).
        limit: usize,
    },
    /// The code lacks the Stylus prefix, does not decompress or breaks an activation rule.
    #[error("{name}: Stylus would refuse to activate it: {reason}")]
    Invalid {
        /// The artifact stem.
        name: &'static str,
        /// What activation would reject.
        reason: String,
    },
}

/// One contract ready to deploy.
#[derive(Clone, Debug)]
pub struct Artifact {
    /// The artifact stem (`session_wallet`).
    pub name: &'static str,
    /// The on-chain code.
    pub code: Vec<u8>,
    /// `keccak256` of the on-chain code (the activation key).
    pub code_hash: B256,
    /// Size of the decompressed WASM.
    pub wasm_size: usize,
}

impl Artifact {
    /// Reads `<dir>/<name>.code` and checks it as activation would: prefix, size limit,
    /// decompression and the activation rules (so a bad build fails here, with the reason,
    /// instead of burning an activation's gas).
    pub fn load(dir: &Path, name: &'static str) -> Result<Self, ArtifactError> {
        let path = dir.join(format!("{name}.code"));
        if !path.exists() {
            return Err(ArtifactError::Missing { path });
        }
        let code = std::fs::read(&path).map_err(|e| ArtifactError::Read {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        Self::from_code(name, code)
    }

    /// Checks on-chain `code` (`EFF00000 || brotli(wasm)`) as [`Artifact::load`] does.
    pub fn from_code(name: &'static str, code: Vec<u8>) -> Result<Self, ArtifactError> {
        let invalid = |reason: String| ArtifactError::Invalid { name, reason };
        if code.len() > stylus_activation::MAX_CODE_SIZE {
            return Err(ArtifactError::TooLarge {
                name,
                size: code.len(),
                limit: stylus_activation::MAX_CODE_SIZE,
            });
        }
        let (_, compressed) = stylus_activation::strip_stylus_prefix(&code)
            .ok_or_else(|| invalid("missing the EFF000 Stylus prefix".into()))?;
        let wasm =
            stylus_activation::decompress(compressed, stylus_activation::limits::MAX_WASM_SIZE)
                .map_err(|e| invalid(format!("brotli: {e}")))?;
        stylus_activation::validate(&wasm).map_err(|e| invalid(e.to_string()))?;
        Ok(Artifact {
            name,
            code_hash: keccak256(&code),
            wasm_size: wasm.len(),
            code,
        })
    }

    /// The creation code that deploys it (the 43-byte prelude + the code).
    pub fn initcode(&self) -> Vec<u8> {
        stylus_activation::deploy_initcode(&self.code)
    }
}

/// What `cargo xtask build-contracts` recorded about the build (`sizes.json`).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct BuildInfo {
    /// The Rust toolchain that built the WASM (`rustup <name>` or `debian rustc-web <version>`).
    #[serde(default)]
    pub toolchain: String,
    /// The `wasm-opt --version` line of the optimizer used.
    #[serde(default)]
    pub wasm_opt: String,
}

impl BuildInfo {
    /// Reads `<dir>/sizes.json`; empty fields when it is absent.
    pub fn load(dir: &Path) -> Self {
        std::fs::read(dir.join("sizes.json"))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }
}
