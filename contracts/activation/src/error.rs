//! Activation errors: one variant per rule, each message naming the problem.

use thiserror::Error;

/// Why a wasm module would fail `ArbWasm.activateProgram` (or why deploy code is unusable).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ActivationError {
    // ----- size and well-formedness -----
    /// The uncompressed module is larger than `MaxWasmSize`.
    #[error("uncompressed size {size} exceeds {limit}")]
    WasmTooLarge {
        /// Uncompressed module size in bytes.
        size: usize,
        /// The [`Config::max_wasm_size`](crate::Config::max_wasm_size) in force.
        limit: usize,
    },
    /// Not a well-formed wasm module even with every proposal enabled (wasmparser's message).
    #[error("malformed wasm: {0}")]
    Malformed(String),
    /// Well-formed, but rejected by wasmparser under the Stylus feature set for a reason no
    /// specific rule names (wasmparser's message).
    #[error("invalid wasm under the Stylus feature set: {0}")]
    Invalid(String),
    /// A component-model binary, an unknown section id or another non-core-module section.
    #[error("unsupported section: {0}")]
    UnsupportedSection(String),

    // ----- wasm features -----
    /// A reference-types construct (non-`funcref` or extra table, table initializer, reference
    /// value or instruction); the text says which and where.
    #[error("reference types are not allowed: {0}")]
    ReferenceTypes(String),
    /// A function type with more than one result (only allowed before Stylus v3, ArbOS 60).
    #[error("multi-value function type {signature} (type index {type_index})")]
    MultiValueFuncType {
        /// Index of the type in the type section.
        type_index: u32,
        /// The type in `(i32) -> (i32, i32)` notation.
        signature: String,
    },
    /// A `block`, `loop` or `if` typed by a type index (params or several results).
    #[error(
        "multi-value block type (block with params or a type index) in {op} in function {func}"
    )]
    MultiValueBlock {
        /// Text name of the instruction (`block`, `loop` or `if`).
        op: String,
        /// Function index (imported functions counted first).
        func: u32,
    },
    /// A bulk-memory instruction other than `memory.copy` and `memory.fill`.
    #[error(
        "bulk-memory op {op} not supported (function {func}); only memory.copy and memory.fill are"
    )]
    BulkMemoryOp {
        /// Text name of the instruction, e.g. `memory.init`.
        op: String,
        /// Function index (imported functions counted first).
        func: u32,
    },
    /// A floating-point instruction, which Stylus programs may not execute.
    #[error("float instruction {op} in function {func}")]
    FloatInstruction {
        /// Text name of the instruction, e.g. `f64.add`.
        op: String,
        /// Function index (imported functions counted first).
        func: u32,
    },
    /// A construct from a wasm proposal outside the Stylus feature set.
    #[error("{feature} is not allowed: {detail}")]
    UnsupportedFeature {
        /// The proposal's readable name, e.g. `SIMD`, `threads`, `memory64`.
        feature: &'static str,
        /// What used it and where.
        detail: String,
    },
    /// A global initialized by anything but a single `i32/i64/f32/f64.const`.
    #[error("global {index} has a non-constant initializer (only i32/i64/f32/f64.const allowed)")]
    NonConstantGlobal {
        /// Index among the module's defined globals.
        index: u32,
    },

    // ----- memory -----
    /// No memory, or memory 0 is not exported under the name `memory`.
    #[error("missing memory with export name \"memory\"")]
    MissingMemory,
    /// More than one memory is defined.
    #[error("only one memory is allowed, found {count}")]
    TooManyMemories {
        /// Memories the module defines.
        count: usize,
    },
    /// The memory starts with more pages than the page limit allows.
    #[error("initial memory {pages} pages exceeds {limit}")]
    MemoryTooLarge {
        /// Initial size of the memory, in 64 KiB pages.
        pages: u64,
        /// The [`Config::page_limit`](crate::Config::page_limit) in force, in pages.
        limit: u64,
    },

    // ----- entrypoint / start -----
    /// No export named `user_entrypoint`.
    #[error("missing export user_entrypoint")]
    MissingEntrypoint,
    /// `user_entrypoint` exports something other than a function.
    #[error("export user_entrypoint must be a function but is a {kind}")]
    EntrypointNotFunction {
        /// The kind it exports, lowercase (e.g. `memory`, `global`).
        kind: String,
    },
    /// `user_entrypoint` does not have the type `(i32) -> i32`.
    #[error("wrong type for user_entrypoint: {found} (expected (i32) -> i32)")]
    WrongEntrypointType {
        /// Its actual type in `(i32) -> i32` notation.
        found: String,
    },
    /// The module has a start section.
    #[error("start function not allowed")]
    StartFunction,

    // ----- imports / exports / names -----
    /// An import that is not a host function of the chain (`vm_hooks`, plus `console`/`debug`
    /// on debug chains).
    #[error("unsupported import {module}::{name}")]
    UnsupportedImport {
        /// The import's module name.
        module: String,
        /// The import's field name.
        name: String,
    },
    /// An imported table, memory, global or tag (only functions may be imported).
    #[error(
        "unsupported import kind for {module}::{name}: {kind} (only functions may be imported)"
    )]
    UnsupportedImportKind {
        /// The import's module name.
        module: String,
        /// The import's field name.
        name: String,
        /// What it imports: `table`, `memory`, `global` or `tag`.
        kind: &'static str,
    },
    /// A host function imported with a type other than the host's.
    #[error("wrong type for import {module}::{name}: {found} (expected {expected})")]
    ImportSignature {
        /// The import's module name.
        module: String,
        /// The import's field name.
        name: String,
        /// The host function's signature, in `(i32, i64) -> i32` notation.
        expected: String,
        /// The signature the module declares for it.
        found: String,
    },
    /// The memory can grow (no maximum equal to its initial size) but the module does not
    /// import `vm_hooks::pay_for_memory_grow`.
    #[error(
        "memory without a fixed maximum requires import vm_hooks::pay_for_memory_grow ((i32) -> ())"
    )]
    MissingPayForMemoryGrow,
    /// An import or export name uses the reserved prefix `stylus`.
    #[error("name starts with reserved prefix stylus: {kind} {name}")]
    ReservedName {
        /// `import` or `export`.
        kind: &'static str,
        /// The import name, or the part of the export name after its last `__`.
        name: String,
    },
    /// An export whose name (the part after its last `__`) equals an import's name.
    #[error("export re-exports import name {name}")]
    ExportShadowsImport {
        /// The import name the export repeats.
        name: String,
    },
    /// An export name or the module name (name section) is longer than
    /// [`MAX_NAME_LEN`](crate::limits::MAX_NAME_LEN).
    #[error("{kind} name too long: {len} > {limit}")]
    NameTooLong {
        /// `export` or `module`.
        kind: &'static str,
        /// The name's length in bytes.
        len: usize,
        /// The maximum length in bytes.
        limit: usize,
    },

    // ----- counting limits -----
    /// More functions defined than [`MAX_FUNCTIONS`](crate::limits::MAX_FUNCTIONS).
    #[error("too many functions: {count} > {limit}")]
    TooManyFunctions {
        /// Functions the module defines (imports excluded).
        count: usize,
        /// The maximum.
        limit: usize,
    },
    /// More imports than [`MAX_IMPORTS`](crate::limits::MAX_IMPORTS).
    #[error("too many imports: {count} > {limit}")]
    TooManyImports {
        /// Imports of any kind.
        count: usize,
        /// The maximum.
        limit: usize,
    },
    /// More exports than [`MAX_EXPORTS`](crate::limits::MAX_EXPORTS).
    #[error("too many exports: {count} > {limit}")]
    TooManyExports {
        /// Exports of any kind.
        count: usize,
        /// The maximum.
        limit: usize,
    },
    /// More globals defined than [`MAX_GLOBALS`](crate::limits::MAX_GLOBALS).
    #[error("too many globals: {count} > {limit}")]
    TooManyGlobals {
        /// Globals the module defines.
        count: usize,
        /// The maximum.
        limit: usize,
    },
    /// More data segments than [`MAX_DATA_SEGMENTS`](crate::limits::MAX_DATA_SEGMENTS).
    #[error("too many data segments: {count} > {limit}")]
    TooManyDataSegments {
        /// Data segments in the data section.
        count: usize,
        /// The maximum.
        limit: usize,
    },
    /// More element segments than
    /// [`MAX_ELEMENT_SEGMENTS`](crate::limits::MAX_ELEMENT_SEGMENTS).
    #[error("too many element segments: {count} > {limit}")]
    TooManyElementSegments {
        /// Element segments in the element section.
        count: usize,
        /// The maximum.
        limit: usize,
    },
    /// The table starts with more entries than
    /// [`MAX_TABLE_ENTRIES`](crate::limits::MAX_TABLE_ENTRIES).
    #[error("too many table entries: {count} > {limit}")]
    TooManyTableEntries {
        /// Initial size of the table, in entries.
        count: u64,
        /// The maximum.
        limit: u64,
    },
    /// The element segments are larger than
    /// [`MAX_ELEMENT_ENTRIES`](crate::limits::MAX_ELEMENT_ENTRIES), counted as nitro does.
    #[error("too many element entries (encoded bytes, as nitro counts them): {count} > {limit}")]
    TooManyElementEntries {
        /// Encoded byte length of all element segments together.
        count: u64,
        /// The maximum.
        limit: u64,
    },
    /// A function declares more locals than
    /// [`MAX_LOCALS_PER_FUNC`](crate::limits::MAX_LOCALS_PER_FUNC).
    #[error("too many locals in function {func}: {count} > {limit}")]
    TooManyLocals {
        /// Function index (imported functions counted first).
        func: u32,
        /// Locals it declares (parameters excluded).
        count: u64,
        /// The maximum.
        limit: u64,
    },
    /// A function body has more instructions than
    /// [`MAX_OPCODES_PER_FUNC`](crate::limits::MAX_OPCODES_PER_FUNC).
    #[error("too many opcodes in function {func}: {count} > {limit}")]
    TooManyOpcodes {
        /// Function index (imported functions counted first).
        func: u32,
        /// Instructions in its body, the final `end` included.
        count: usize,
        /// The maximum.
        limit: usize,
    },

    // ----- deploy code -----
    /// The on-chain code is larger than [`MAX_CODE_SIZE`](crate::MAX_CODE_SIZE).
    #[error(
        "contract code is {size} bytes (EFF00000 prefix included), exceeds max code size {limit}"
    )]
    CodeTooLarge {
        /// Size of the contract code in bytes, Stylus prefix included.
        size: usize,
        /// The maximum.
        limit: usize,
    },
}
