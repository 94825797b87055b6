//! Stylus programs: activation (prefix, decompression, the nitro rules, compilation) and the
//! cache of compiled modules keyed by code hash.
//!
//! Activation is by code hash, as in ArbWasm: two contracts with identical code share one
//! activation. A contract whose code carries the Stylus prefix but whose hash was never
//! activated cannot be called (the call reverts with empty data, as on Arbitrum).

use std::collections::HashMap;

use alloy_primitives::{keccak256, B256};
use stylus_activation::limits::MAX_WASM_SIZE;
use wasmi::{Config, Engine, Module};

/// Why code cannot be activated.
#[derive(Debug, thiserror::Error)]
pub enum ActivationError {
    /// Code without the `EF F0 00` prefix (ArbWasm `ProgramNotWasm`).
    #[error("code is not a Stylus program (missing EF F0 00 prefix)")]
    NotWasm,
    /// Only dictionary 0 (none) is supported; cargo-stylus always emits it.
    #[error("unsupported brotli dictionary {0}")]
    UnsupportedDictionary(u8),
    #[error("brotli decompression failed: {0}")]
    Decompress(String),
    /// The nitro activation rules rejected the module.
    #[error("activation rules: {0}")]
    Rules(#[from] stylus_activation::ActivationError),
    /// wasmi refused the module (should not happen after the rules pass).
    #[error("compilation failed: {0}")]
    Compile(String),
}

/// What activation records about a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramInfo {
    /// `keccak256` of the deployed code (prefix included), the activation key.
    pub code_hash: B256,
    /// Stylus version the program was activated at.
    pub version: u16,
    /// Initial memory pages: the footprint paid on every call.
    pub footprint: u16,
    /// Uncompressed wasm size in bytes.
    pub wasm_size: usize,
}

/// Stylus version reported for activations (ArbOS 60 rules).
pub const STYLUS_VERSION: u16 = 2;

/// An activated program: its facts and compiled module.
#[derive(Clone)]
pub(crate) struct Program {
    pub info: ProgramInfo,
    pub module: Module,
}

/// Activated programs and the wasmi engine they are compiled for. `Clone` is cheap (modules
/// are reference-counted), so the chain can snapshot activations together with the state.
#[derive(Clone)]
pub struct Programs {
    engine: Engine,
    by_hash: HashMap<B256, Program>,
}

impl Default for Programs {
    fn default() -> Self {
        Self::new()
    }
}

impl Programs {
    pub fn new() -> Self {
        Programs {
            engine: Engine::new(&engine_config()),
            by_hash: HashMap::new(),
        }
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Activates `code` (as stored on chain: `EF F0 00 <dict> || brotli(wasm)`). Activating
    /// code that is already active returns the existing info (ArbWasm would revert with
    /// `ProgramUpToDate`; that is the JSON-RPC layer's business).
    pub fn activate(&mut self, code: &[u8]) -> Result<ProgramInfo, ActivationError> {
        let code_hash = keccak256(code);
        if let Some(p) = self.by_hash.get(&code_hash) {
            return Ok(p.info.clone());
        }
        let (dict, compressed) =
            stylus_activation::strip_stylus_prefix(code).ok_or(ActivationError::NotWasm)?;
        if dict != 0 {
            return Err(ActivationError::UnsupportedDictionary(dict));
        }
        let wasm = stylus_activation::decompress(compressed, MAX_WASM_SIZE)
            .map_err(|e| ActivationError::Decompress(e.to_string()))?;
        let module_info = stylus_activation::validate(&wasm)?;
        let module = Module::new(&self.engine, &wasm)
            .map_err(|e| ActivationError::Compile(e.to_string()))?;
        let info = ProgramInfo {
            code_hash,
            version: STYLUS_VERSION,
            // The rules cap initial pages at 128, so this cannot truncate.
            footprint: module_info.initial_pages as u16,
            wasm_size: wasm.len(),
        };
        self.by_hash.insert(
            code_hash,
            Program {
                info: info.clone(),
                module,
            },
        );
        Ok(info)
    }

    /// The activated program with this code hash, if any.
    pub fn info(&self, code_hash: B256) -> Option<&ProgramInfo> {
        self.by_hash.get(&code_hash).map(|p| &p.info)
    }

    pub(crate) fn get(&self, code_hash: B256) -> Option<&Program> {
        self.by_hash.get(&code_hash)
    }
}

/// Whether deployed code is a (classic) Stylus program.
pub fn is_stylus_program(code: &[u8]) -> bool {
    stylus_activation::strip_stylus_prefix(code).is_some()
}

/// The wasmi configuration mirroring the Stylus feature set (host ABI reference §3/§4): fuel
/// metering on; everything nitro rejects at ArbOS 60 off (SIMD and wide arithmetic are not even
/// compiled in: wasmi's `simd` feature is off); no start function. Floats are off
/// too, which is stricter than nitro (it only rejects float *instructions*, which the
/// activation rules already catch) but no contract of ours uses float types.
fn engine_config() -> Config {
    let mut config = Config::default();
    config
        .consume_fuel(true)
        .wasm_mutable_global(true)
        .wasm_sign_extension(true)
        .wasm_saturating_float_to_int(true)
        .wasm_bulk_memory(true)
        .wasm_multi_value(false)
        .wasm_reference_types(false)
        .wasm_tail_call(false)
        .wasm_extended_const(false)
        .wasm_memory64(false)
        .wasm_multi_memory(false)
        .wasm_custom_page_sizes(false)
        .floats(false)
        .allow_start_fn(false);
    config
}
