//! Stylus programs: validation and compilation (prefix, decompression, the nitro rules,
//! wasmi), and the cache of compiled modules keyed by code hash.
//!
//! Which code hashes are *activated* is chain state, not this cache: ArbWasm keeps one record
//! per code hash in its storage (see [`crate::arbwasm`]), so activations are journaled,
//! snapshotted and saved with the rest of the world. [`Programs`] only remembers compiled
//! modules; a program whose record exists but whose module is not cached (after loading a
//! state file, or in a fresh executor) is compiled from its code on first call.

use std::collections::HashMap;

use alloy_primitives::B256;
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
    /// Brotli decompression of the wasm body failed (corrupt or truncated stream).
    #[error("brotli decompression failed: {0}")]
    Decompress(String),
    /// The nitro activation rules rejected the module.
    #[error("activation rules: {0}")]
    Rules(#[from] stylus_activation::ActivationError),
    /// wasmi refused the module (should not happen after the rules pass).
    #[error("compilation failed: {0}")]
    Compile(String),
}

/// An activation record: what ArbWasm stores about an activated code hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramInfo {
    /// `keccak256` of the deployed code (prefix included), the activation key.
    pub code_hash: B256,
    /// Stylus version the program was activated at.
    pub version: u16,
    /// Initial memory pages: the footprint paid on every call.
    pub footprint: u16,
    /// Uncompressed wasm size in bytes (at most 128 KiB).
    pub wasm_size: u32,
    /// Timestamp of the block that activated it (ArbOS counts hours since 2015; seconds here).
    pub activated_at: u64,
}

/// Stylus version reported for activations (ArbOS 60 rules).
pub const STYLUS_VERSION: u16 = 2;

/// A validated, compiled program.
#[derive(Clone)]
pub(crate) struct Compiled {
    /// Reference-counted by wasmi: cloning is cheap.
    pub module: Module,
    pub footprint: u16,
    pub wasm_size: u32,
}

/// The wasmi engine and the modules compiled for it, by code hash. A pure cache: dropping an
/// entry only costs a recompilation.
pub struct Programs {
    engine: Engine,
    by_hash: HashMap<B256, Compiled>,
}

impl Default for Programs {
    fn default() -> Self {
        Self::new()
    }
}

impl Programs {
    /// An empty cache backed by a fresh wasmi engine configured for metering.
    pub fn new() -> Self {
        Programs {
            engine: Engine::new(&engine_config()),
            by_hash: HashMap::new(),
        }
    }

    /// The wasmi engine every cached module is compiled for.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Whether the module for `code_hash` is compiled (tests of lazy compilation).
    pub fn is_cached(&self, code_hash: B256) -> bool {
        self.by_hash.contains_key(&code_hash)
    }

    /// Validates and compiles `code` (as stored on chain: `EF F0 00 <dict> || brotli(wasm)`)
    /// whose hash is `code_hash`, or returns the cached result.
    pub(crate) fn compile(
        &mut self,
        code_hash: B256,
        code: &[u8],
    ) -> Result<&Compiled, ActivationError> {
        if !self.by_hash.contains_key(&code_hash) {
            let compiled = compile(&self.engine, code)?;
            self.by_hash.insert(code_hash, compiled);
        }
        Ok(&self.by_hash[&code_hash])
    }
}

fn compile(engine: &Engine, code: &[u8]) -> Result<Compiled, ActivationError> {
    let (dict, compressed) =
        stylus_activation::strip_stylus_prefix(code).ok_or(ActivationError::NotWasm)?;
    if dict != 0 {
        return Err(ActivationError::UnsupportedDictionary(dict));
    }
    let wasm = stylus_activation::decompress(compressed, MAX_WASM_SIZE)
        .map_err(|e| ActivationError::Decompress(e.to_string()))?;
    let module_info = stylus_activation::validate(&wasm)?;
    let module = Module::new(engine, &wasm).map_err(|e| ActivationError::Compile(e.to_string()))?;
    Ok(Compiled {
        module,
        // The rules cap initial pages at 128 and the wasm at 128 KiB: no truncation.
        footprint: module_info.initial_pages as u16,
        wasm_size: wasm.len() as u32,
    })
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
