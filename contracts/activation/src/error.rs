//! Activation errors: one variant per rule, each message naming the problem.

use thiserror::Error;

/// Why a wasm module would fail `ArbWasm.activateProgram` (or why deploy code is unusable).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ActivationError {
    // ----- size and well-formedness -----
    #[error("uncompressed size {size} exceeds {limit}")]
    WasmTooLarge { size: usize, limit: usize },
    #[error("malformed wasm: {0}")]
    Malformed(String),
    #[error("invalid wasm under the Stylus feature set: {0}")]
    Invalid(String),
    #[error("unsupported section: {0}")]
    UnsupportedSection(String),

    // ----- wasm features -----
    #[error("reference types are not allowed: {0}")]
    ReferenceTypes(String),
    #[error("multi-value function type {signature} (type index {type_index})")]
    MultiValueFuncType { type_index: u32, signature: String },
    #[error(
        "multi-value block type (block with params or a type index) in {op} in function {func}"
    )]
    MultiValueBlock { op: String, func: u32 },
    #[error(
        "bulk-memory op {op} not supported (function {func}); only memory.copy and memory.fill are"
    )]
    BulkMemoryOp { op: String, func: u32 },
    #[error("float instruction {op} in function {func}")]
    FloatInstruction { op: String, func: u32 },
    #[error("{feature} is not allowed: {detail}")]
    UnsupportedFeature {
        feature: &'static str,
        detail: String,
    },
    #[error("global {index} has a non-constant initializer (only i32/i64/f32/f64.const allowed)")]
    NonConstantGlobal { index: u32 },

    // ----- memory -----
    #[error("missing memory with export name \"memory\"")]
    MissingMemory,
    #[error("only one memory is allowed, found {count}")]
    TooManyMemories { count: usize },
    #[error("initial memory {pages} pages exceeds {limit}")]
    MemoryTooLarge { pages: u64, limit: u64 },

    // ----- entrypoint / start -----
    #[error("missing export user_entrypoint")]
    MissingEntrypoint,
    #[error("export user_entrypoint must be a function but is a {kind}")]
    EntrypointNotFunction { kind: String },
    #[error("wrong type for user_entrypoint: {found} (expected (i32) -> i32)")]
    WrongEntrypointType { found: String },
    #[error("start function not allowed")]
    StartFunction,

    // ----- imports / exports / names -----
    #[error("unsupported import {module}::{name}")]
    UnsupportedImport { module: String, name: String },
    #[error(
        "unsupported import kind for {module}::{name}: {kind} (only functions may be imported)"
    )]
    UnsupportedImportKind {
        module: String,
        name: String,
        kind: &'static str,
    },
    #[error("wrong type for import {module}::{name}: {found} (expected {expected})")]
    ImportSignature {
        module: String,
        name: String,
        expected: String,
        found: String,
    },
    #[error(
        "memory without a fixed maximum requires import vm_hooks::pay_for_memory_grow ((i32) -> ())"
    )]
    MissingPayForMemoryGrow,
    #[error("name starts with reserved prefix stylus: {kind} {name}")]
    ReservedName { kind: &'static str, name: String },
    #[error("export re-exports import name {name}")]
    ExportShadowsImport { name: String },
    #[error("{kind} name too long: {len} > {limit}")]
    NameTooLong {
        kind: &'static str,
        len: usize,
        limit: usize,
    },

    // ----- counting limits -----
    #[error("too many functions: {count} > {limit}")]
    TooManyFunctions { count: usize, limit: usize },
    #[error("too many imports: {count} > {limit}")]
    TooManyImports { count: usize, limit: usize },
    #[error("too many exports: {count} > {limit}")]
    TooManyExports { count: usize, limit: usize },
    #[error("too many globals: {count} > {limit}")]
    TooManyGlobals { count: usize, limit: usize },
    #[error("too many data segments: {count} > {limit}")]
    TooManyDataSegments { count: usize, limit: usize },
    #[error("too many element segments: {count} > {limit}")]
    TooManyElementSegments { count: usize, limit: usize },
    #[error("too many table entries: {count} > {limit}")]
    TooManyTableEntries { count: u64, limit: u64 },
    #[error("too many element entries (encoded bytes, as nitro counts them): {count} > {limit}")]
    TooManyElementEntries { count: u64, limit: u64 },
    #[error("too many locals in function {func}: {count} > {limit}")]
    TooManyLocals { func: u32, count: u64, limit: u64 },
    #[error("too many opcodes in function {func}: {count} > {limit}")]
    TooManyOpcodes {
        func: u32,
        count: usize,
        limit: usize,
    },

    // ----- deploy code -----
    #[error(
        "contract code is {size} bytes (EFF00000 prefix included), exceeds max code size {limit}"
    )]
    CodeTooLarge { size: usize, limit: usize },
}
