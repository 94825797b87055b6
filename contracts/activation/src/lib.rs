//! Offline checks for Arbitrum Stylus programs: the rules `ArbWasm.activateProgram` enforces
//! (nitro `binary.rs parse_user` and friends), the on-chain code format and the size limits.
//!
//! Used by `cargo xtask build-contracts` after every contract build and, later, by the local
//! devnet at `activateProgram` time, so that "activates locally" implies "activates on Arbitrum".
//! The rules and numbers come from the project's Stylus host ABI reference (§1-§3).
//!
//! ```no_run
//! let wasm = std::fs::read("target/contracts/session_wallet.wasm").unwrap();
//! let info = stylus_activation::validate(&wasm).expect("activation would fail");
//! let code = stylus_activation::contract_code(&wasm);
//! stylus_activation::check_code_size(&code).expect("too large for one program");
//! println!("{} functions, {} pages", info.functions, info.initial_pages);
//! ```

mod code;
mod error;
pub mod hostio;
mod ops;

use std::collections::HashSet;

use wasmparser::{
    BlockType, CompositeInnerType, ElementSectionReader, Encoding, ExternalKind, FuncType,
    FunctionBody, KnownCustom, MemoryType, Name, Operator, Parser, Payload, RefType, TableInit,
    TypeRef, ValType, Validator, WasmFeatures,
};

pub use code::{
    check_code_size, compress, contract_code, decompress, deploy_initcode, strip_custom_sections,
    strip_stylus_prefix, BROTLI_LGWIN, BROTLI_QUALITY, DEPLOY_PRELUDE_LEN, MAX_CODE_SIZE,
    STYLUS_PREFIX,
};
pub use error::ActivationError;
pub use hostio::{HostFn, WasmTy};

/// Numeric activation limits (reference §3, nitro `parse_user` / params).
pub mod limits {
    /// `MaxWasmSize`: the uncompressed wasm.
    pub const MAX_WASM_SIZE: usize = 131_072;
    /// `PageLimit`: initial memory pages (minus pages already open in the tx).
    pub const PAGE_LIMIT: u64 = 128;
    /// Memories a module may define.
    pub const MAX_MEMORIES: usize = 1;
    /// Data segments in the data section.
    pub const MAX_DATA_SEGMENTS: usize = 128;
    /// Element segments in the element section.
    pub const MAX_ELEMENT_SEGMENTS: usize = 128;
    /// Exports of any kind.
    pub const MAX_EXPORTS: usize = 1024;
    /// Functions the module defines (imports excluded).
    pub const MAX_FUNCTIONS: usize = 4096;
    /// Globals the module defines.
    pub const MAX_GLOBALS: usize = 32_768;
    /// Declared locals of one function (parameters excluded).
    pub const MAX_LOCALS_PER_FUNC: u64 = 348;
    /// Instructions in one function body.
    pub const MAX_OPCODES_PER_FUNC: usize = 65_536;
    /// Imports of any kind. Since ArbOS 32 ("StylusChargingFixes").
    pub const MAX_IMPORTS: usize = 513;
    /// Initial table size, in entries.
    pub const MAX_TABLE_ENTRIES: u64 = 4096;
    /// Element segments' total size. Nitro sums the encoded byte length of the element segments
    /// against this.
    pub const MAX_ELEMENT_ENTRIES: u64 = 4096;
    /// Bytes in an export name or the module name (name section).
    pub const MAX_NAME_LEN: usize = 512;
    /// Import and export names may not start with this (for exports: the part after the last
    /// `__`).
    pub const RESERVED_PREFIX: &str = "stylus";
    /// Name of the exported `(i32) -> i32` function the host calls for every transaction.
    pub const ENTRYPOINT: &str = "user_entrypoint";
    /// Name under which memory 0 must be exported.
    pub const MEMORY_EXPORT: &str = "memory";
}

use limits::*;

/// What to validate against. [`Config::default`] is a production chain at ArbOS 60
/// (Stylus v3: multi-value rejected, no debug imports, 128 pages, 128 KiB wasm).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Pages the program may start with (`PageLimit` minus pages already open in the tx).
    pub page_limit: u64,
    /// `MaxWasmSize` for the uncompressed module.
    pub max_wasm_size: usize,
    /// Multi-value is only accepted when activating at ArbOS < 60 (Stylus version < 3).
    pub allow_multi_value: bool,
    /// Debug chains also link the `console` and `debug` import modules.
    pub debug_chain: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            page_limit: PAGE_LIMIT,
            max_wasm_size: MAX_WASM_SIZE,
            allow_multi_value: false,
            debug_chain: false,
        }
    }
}

impl Config {
    /// The wasmparser feature set nitro validates user programs with.
    pub fn features(&self) -> WasmFeatures {
        let mut features = WasmFeatures::MUTABLE_GLOBAL
            | WasmFeatures::SATURATING_FLOAT_TO_INT
            | WasmFeatures::SIGN_EXTENSION
            | WasmFeatures::BULK_MEMORY
            | WasmFeatures::FLOATS;
        if self.allow_multi_value {
            features |= WasmFeatures::MULTI_VALUE;
        }
        features
    }
}

/// Facts about a module that passed validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleInfo {
    /// Uncompressed size in bytes.
    pub size: usize,
    /// Host functions imported, in import order.
    pub imports: Vec<&'static HostFn>,
    /// Functions defined by the module (imports excluded).
    pub functions: usize,
    /// Initial memory pages (the program's footprint).
    pub initial_pages: u64,
    /// Declared maximum memory pages, if any.
    pub max_pages: Option<u64>,
    /// Export names.
    pub exports: Vec<String>,
    /// Globals defined by the module.
    pub globals: usize,
    /// Data segments in the data section.
    pub data_segments: usize,
    /// Element segments in the element section.
    pub element_segments: usize,
    /// Initial table size in entries (0 without a table).
    pub table_entries: u64,
    /// Largest declared-local count of any function.
    pub max_locals: u64,
    /// Largest opcode count of any function body.
    pub max_opcodes: usize,
}

impl ModuleInfo {
    /// Whether the module imports `vm_hooks::<name>`.
    pub fn imports_hook(&self, name: &str) -> bool {
        self.imports
            .iter()
            .any(|f| f.module == hostio::VM_HOOKS && f.name == name)
    }
}

/// Validates `wasm` against the production rules ([`Config::default`]).
pub fn validate(wasm: &[u8]) -> Result<ModuleInfo, ActivationError> {
    validate_with(wasm, &Config::default())
}

/// Validates `wasm` (uncompressed, as activation sees it) against `config`.
pub fn validate_with(wasm: &[u8], config: &Config) -> Result<ModuleInfo, ActivationError> {
    if wasm.len() > config.max_wasm_size {
        return Err(ActivationError::WasmTooLarge {
            size: wasm.len(),
            limit: config.max_wasm_size,
        });
    }
    // Well-formed with every proposal on, so the rule pass below can trust indices and then
    // name the precise Stylus rule a construct breaks.
    Validator::new_with_features(WasmFeatures::all())
        .validate_all(wasm)
        .map_err(|e| ActivationError::Malformed(e.to_string()))?;

    let module = Module::parse(wasm, config)?;
    let info = module.check(wasm.len(), config)?;

    // Safety net: anything else the Stylus feature set does not accept.
    Validator::new_with_features(config.features())
        .validate_all(wasm)
        .map_err(|e| ActivationError::Invalid(e.to_string()))?;
    Ok(info)
}

struct Import<'a> {
    module: &'a str,
    name: &'a str,
    ty: TypeRef,
}

struct Export<'a> {
    name: &'a str,
    kind: ExternalKind,
    index: u32,
}

/// The parts of a module the activation rules look at.
#[derive(Default)]
struct Module<'a> {
    /// Function types by type index (`None` for non-function types).
    types: Vec<Option<FuncType>>,
    imports: Vec<Import<'a>>,
    imported_funcs: u32,
    /// Type index of every function (imports first).
    func_types: Vec<u32>,
    memories: Vec<MemoryType>,
    table_entries: u64,
    globals: usize,
    exports: Vec<Export<'a>>,
    data_segments: usize,
    element_segments: usize,
    element_bytes: u64,
    functions: usize,
    max_locals: u64,
    max_opcodes: usize,
    module_name: Option<&'a str>,
}

fn malformed(e: wasmparser::BinaryReaderError) -> ActivationError {
    ActivationError::Malformed(e.to_string())
}

/// Rejects value types outside the Stylus feature set.
fn check_val_type(ty: ValType, location: impl Fn() -> String) -> Result<(), ActivationError> {
    match ty {
        ValType::I32 | ValType::I64 | ValType::F32 | ValType::F64 => Ok(()),
        ValType::V128 => Err(ActivationError::UnsupportedFeature {
            feature: "SIMD",
            detail: format!("v128 in {}", location()),
        }),
        ValType::Ref(r) => Err(ActivationError::ReferenceTypes(format!(
            "{r} in {}",
            location()
        ))),
    }
}

fn signature(ty: &FuncType) -> String {
    hostio::format_signature(ty.params(), ty.results())
}

fn to_wasm_ty(ty: &ValType) -> Option<WasmTy> {
    Some(match ty {
        ValType::I32 => WasmTy::I32,
        ValType::I64 => WasmTy::I64,
        ValType::F32 => WasmTy::F32,
        ValType::F64 => WasmTy::F64,
        _ => return None,
    })
}

fn matches_host(ty: &FuncType, host: &HostFn) -> bool {
    let same = |a: &[ValType], b: &[WasmTy]| {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| to_wasm_ty(x) == Some(*y))
    };
    same(ty.params(), host.params) && same(ty.results(), host.results)
}

fn feature_for(proposal: &'static str) -> &'static str {
    match proposal {
        "simd" | "relaxed_simd" => "SIMD",
        "threads" | "shared_everything_threads" | "acquire_release_atomics" => "threads",
        "tail_call" => "tail calls",
        "exceptions" | "legacy_exceptions" => "exception handling",
        "gc" | "function_references" | "custom_descriptors" => "GC / typed function references",
        other => other,
    }
}

impl<'a> Module<'a> {
    fn parse(wasm: &'a [u8], config: &Config) -> Result<Self, ActivationError> {
        let mut m = Module::default();
        for payload in Parser::new(0).parse_all(wasm) {
            match payload.map_err(malformed)? {
                Payload::Version { encoding, .. } => {
                    if encoding != Encoding::Module {
                        return Err(ActivationError::UnsupportedSection(
                            "component model binary".into(),
                        ));
                    }
                }
                Payload::TypeSection(reader) => {
                    for group in reader {
                        let group = group.map_err(malformed)?;
                        if group.is_explicit_rec_group() {
                            return Err(ActivationError::UnsupportedFeature {
                                feature: feature_for("gc"),
                                detail: "recursive type group".into(),
                            });
                        }
                        for sub in group.into_types() {
                            let type_index = m.types.len() as u32;
                            let CompositeInnerType::Func(ft) = &sub.composite_type.inner else {
                                return Err(ActivationError::UnsupportedFeature {
                                    feature: feature_for("gc"),
                                    detail: format!("non-function type at type index {type_index}"),
                                });
                            };
                            for ty in ft.params().iter().chain(ft.results()) {
                                check_val_type(*ty, || format!("type index {type_index}"))?;
                            }
                            if ft.results().len() > 1 && !config.allow_multi_value {
                                return Err(ActivationError::MultiValueFuncType {
                                    type_index,
                                    signature: signature(ft),
                                });
                            }
                            m.types.push(Some(ft.clone()));
                        }
                    }
                }
                Payload::ImportSection(reader) => {
                    for import in reader.into_imports() {
                        let import = import.map_err(malformed)?;
                        if let TypeRef::Func(ty) = import.ty {
                            m.func_types.push(ty);
                            m.imported_funcs += 1;
                        }
                        m.imports.push(Import {
                            module: import.module,
                            name: import.name,
                            ty: import.ty,
                        });
                    }
                }
                Payload::FunctionSection(reader) => {
                    for ty in reader {
                        m.func_types.push(ty.map_err(malformed)?);
                    }
                }
                Payload::TableSection(reader) => {
                    for (index, table) in reader.into_iter().enumerate() {
                        let table = table.map_err(malformed)?;
                        if index > 0 {
                            return Err(ActivationError::ReferenceTypes(
                                "more than one table".into(),
                            ));
                        }
                        if table.ty.element_type != RefType::FUNCREF {
                            return Err(ActivationError::ReferenceTypes(format!(
                                "table of {}",
                                table.ty.element_type
                            )));
                        }
                        if let TableInit::Expr(_) = table.init {
                            return Err(ActivationError::ReferenceTypes(
                                "table with an initializer expression".into(),
                            ));
                        }
                        if table.ty.table64 {
                            return Err(ActivationError::UnsupportedFeature {
                                feature: "memory64",
                                detail: "64-bit table".into(),
                            });
                        }
                        m.table_entries = m.table_entries.saturating_add(table.ty.initial);
                    }
                }
                Payload::MemorySection(reader) => {
                    for memory in reader {
                        let memory = memory.map_err(malformed)?;
                        if memory.memory64 {
                            return Err(ActivationError::UnsupportedFeature {
                                feature: "memory64",
                                detail: "64-bit memory".into(),
                            });
                        }
                        if memory.shared {
                            return Err(ActivationError::UnsupportedFeature {
                                feature: "threads",
                                detail: "shared memory".into(),
                            });
                        }
                        if memory.page_size_log2.is_some() {
                            return Err(ActivationError::UnsupportedFeature {
                                feature: "custom-page-sizes",
                                detail: "memory with a custom page size".into(),
                            });
                        }
                        m.memories.push(memory);
                    }
                }
                Payload::TagSection(_) => {
                    return Err(ActivationError::UnsupportedFeature {
                        feature: feature_for("exceptions"),
                        detail: "tag section".into(),
                    });
                }
                Payload::GlobalSection(reader) => {
                    for global in reader {
                        let global = global.map_err(malformed)?;
                        let index = m.globals as u32;
                        check_val_type(global.ty.content_type, || format!("global {index}"))?;
                        if global.ty.shared {
                            return Err(ActivationError::UnsupportedFeature {
                                feature: "threads",
                                detail: format!("shared global {index}"),
                            });
                        }
                        let mut init = global.init_expr.get_operators_reader();
                        let first = init.read().map_err(malformed)?;
                        let second = init.read().map_err(malformed)?;
                        let constant = matches!(
                            first,
                            Operator::I32Const { .. }
                                | Operator::I64Const { .. }
                                | Operator::F32Const { .. }
                                | Operator::F64Const { .. }
                        );
                        if !constant || !matches!(second, Operator::End) || !init.eof() {
                            return Err(ActivationError::NonConstantGlobal { index });
                        }
                        m.globals += 1;
                    }
                }
                Payload::ExportSection(reader) => {
                    for export in reader {
                        let export = export.map_err(malformed)?;
                        m.exports.push(Export {
                            name: export.name,
                            kind: export.kind,
                            index: export.index,
                        });
                    }
                }
                Payload::StartSection { .. } => return Err(ActivationError::StartFunction),
                Payload::ElementSection(reader) => m.elements(reader)?,
                Payload::DataSection(reader) => m.data_segments += reader.count() as usize,
                Payload::CodeSectionEntry(body) => m.function(body, config)?,
                Payload::CustomSection(reader) => {
                    if let KnownCustom::Name(names) = reader.as_known() {
                        for name in names {
                            match name {
                                Ok(Name::Module { name, .. }) => m.module_name = Some(name),
                                Ok(_) => {}
                                Err(_) => break,
                            }
                        }
                    }
                }
                Payload::UnknownSection { id, .. } => {
                    return Err(ActivationError::UnsupportedSection(format!(
                        "unknown section id {id}"
                    )));
                }
                Payload::DataCountSection { .. }
                | Payload::CodeSectionStart { .. }
                | Payload::End(_) => {}
                #[allow(unreachable_patterns)]
                _ => {
                    return Err(ActivationError::UnsupportedSection(
                        "non-core-module section".into(),
                    ));
                }
            }
        }
        Ok(m)
    }

    fn elements(&mut self, reader: ElementSectionReader<'a>) -> Result<(), ActivationError> {
        for element in reader {
            let element = element.map_err(malformed)?;
            self.element_segments += 1;
            self.element_bytes = self
                .element_bytes
                .saturating_add(element.range.end - element.range.start);
        }
        Ok(())
    }

    fn function(&mut self, body: FunctionBody<'a>, config: &Config) -> Result<(), ActivationError> {
        let func = self.imported_funcs + self.functions as u32;
        self.functions += 1;

        let mut locals = 0u64;
        for local in body.get_locals_reader().map_err(malformed)? {
            let (count, ty) = local.map_err(malformed)?;
            check_val_type(ty, || format!("locals of function {func}"))?;
            locals = locals.saturating_add(count.into());
        }
        if locals > MAX_LOCALS_PER_FUNC {
            return Err(ActivationError::TooManyLocals {
                func,
                count: locals,
                limit: MAX_LOCALS_PER_FUNC,
            });
        }
        self.max_locals = self.max_locals.max(locals);

        let mut reader = body.get_operators_reader().map_err(malformed)?;
        let mut opcodes = 0usize;
        while !reader.eof() {
            let op = reader.read().map_err(malformed)?;
            opcodes += 1;
            check_operator(&op, func, config)?;
        }
        if opcodes > MAX_OPCODES_PER_FUNC {
            return Err(ActivationError::TooManyOpcodes {
                func,
                count: opcodes,
                limit: MAX_OPCODES_PER_FUNC,
            });
        }
        self.max_opcodes = self.max_opcodes.max(opcodes);
        Ok(())
    }

    fn func_type(&self, func: u32) -> Option<&FuncType> {
        let ty = *self.func_types.get(func as usize)?;
        self.types.get(ty as usize)?.as_ref()
    }

    /// Module-level rules, in roughly the order nitro applies them.
    fn check(&self, size: usize, config: &Config) -> Result<ModuleInfo, ActivationError> {
        // Imports: reserved names, kind, allow-list and exact signatures.
        let mut hooks = Vec::with_capacity(self.imports.len());
        for import in &self.imports {
            let (module, name) = (import.module.to_string(), import.name.to_string());
            if import.name.starts_with(RESERVED_PREFIX) {
                return Err(ActivationError::ReservedName {
                    kind: "import",
                    name,
                });
            }
            let ty = match import.ty {
                TypeRef::Func(ty) => ty,
                other => {
                    let kind = match other {
                        TypeRef::Table(_) => "table",
                        TypeRef::Memory(_) => "memory",
                        TypeRef::Global(_) => "global",
                        TypeRef::Tag(_) => "tag",
                        _ => "exact function",
                    };
                    return Err(ActivationError::UnsupportedImportKind { module, name, kind });
                }
            };
            let Some(host) = hostio::lookup(import.module, import.name, config.debug_chain) else {
                return Err(ActivationError::UnsupportedImport { module, name });
            };
            let Some(Some(found)) = self.types.get(ty as usize) else {
                return Err(ActivationError::Malformed(format!(
                    "import {module}::{name} has an unknown type index {ty}"
                )));
            };
            if !matches_host(found, host) {
                return Err(ActivationError::ImportSignature {
                    module,
                    name,
                    expected: host.signature(),
                    found: signature(found),
                });
            }
            hooks.push(host);
        }

        // Exactly one memory, exported as "memory", within the page limit.
        let memory = match self.memories.as_slice() {
            [] => return Err(ActivationError::MissingMemory),
            [memory] => *memory,
            many => {
                return Err(ActivationError::TooManyMemories { count: many.len() });
            }
        };
        let memory_export = self.exports.iter().find(|e| e.name == MEMORY_EXPORT);
        if !matches!(memory_export, Some(e) if e.kind == ExternalKind::Memory && e.index == 0) {
            return Err(ActivationError::MissingMemory);
        }
        if memory.initial > config.page_limit {
            return Err(ActivationError::MemoryTooLarge {
                pages: memory.initial,
                limit: config.page_limit,
            });
        }

        // The entrypoint.
        let Some(entry) = self.exports.iter().find(|e| e.name == ENTRYPOINT) else {
            return Err(ActivationError::MissingEntrypoint);
        };
        if entry.kind != ExternalKind::Func {
            return Err(ActivationError::EntrypointNotFunction {
                kind: format!("{:?}", entry.kind).to_lowercase(),
            });
        }
        let entry_ty = self.func_type(entry.index).ok_or_else(|| {
            ActivationError::Malformed("user_entrypoint has no function type".into())
        })?;
        if entry_ty.params() != [ValType::I32] || entry_ty.results() != [ValType::I32] {
            return Err(ActivationError::WrongEntrypointType {
                found: signature(entry_ty),
            });
        }

        // Growable memory needs the host's page charging hook.
        if memory.maximum != Some(memory.initial)
            && !hooks
                .iter()
                .any(|h| h.module == hostio::VM_HOOKS && h.name == "pay_for_memory_grow")
        {
            return Err(ActivationError::MissingPayForMemoryGrow);
        }

        // Exports: nitro compares the part after the last "__" against import names and the
        // reserved prefix.
        let export_tails: HashSet<&str> = self
            .exports
            .iter()
            .filter_map(|e| e.name.rsplit("__").next())
            .collect();
        if let Some(import) = self.imports.iter().find(|i| export_tails.contains(i.name)) {
            return Err(ActivationError::ExportShadowsImport {
                name: import.name.to_string(),
            });
        }
        if let Some(tail) = self
            .exports
            .iter()
            .filter_map(|e| e.name.rsplit("__").next())
            .find(|t| t.starts_with(RESERVED_PREFIX))
        {
            return Err(ActivationError::ReservedName {
                kind: "export",
                name: tail.to_string(),
            });
        }

        // Counting limits.
        macro_rules! limit {
            ($variant:ident, $count:expr, $limit:expr) => {
                if $count > $limit {
                    return Err(ActivationError::$variant {
                        count: $count,
                        limit: $limit,
                    });
                }
            };
        }
        limit!(TooManyDataSegments, self.data_segments, MAX_DATA_SEGMENTS);
        limit!(
            TooManyElementSegments,
            self.element_segments,
            MAX_ELEMENT_SEGMENTS
        );
        limit!(TooManyExports, self.exports.len(), MAX_EXPORTS);
        limit!(TooManyFunctions, self.functions, MAX_FUNCTIONS);
        limit!(TooManyGlobals, self.globals, MAX_GLOBALS);
        limit!(TooManyImports, self.imports.len(), MAX_IMPORTS);
        limit!(TooManyTableEntries, self.table_entries, MAX_TABLE_ENTRIES);
        limit!(
            TooManyElementEntries,
            self.element_bytes,
            MAX_ELEMENT_ENTRIES
        );

        // Name lengths.
        if let Some(export) = self.exports.iter().find(|e| e.name.len() > MAX_NAME_LEN) {
            return Err(ActivationError::NameTooLong {
                kind: "export",
                len: export.name.len(),
                limit: MAX_NAME_LEN,
            });
        }
        if let Some(name) = self.module_name.filter(|n| n.len() > MAX_NAME_LEN) {
            return Err(ActivationError::NameTooLong {
                kind: "module",
                len: name.len(),
                limit: MAX_NAME_LEN,
            });
        }

        Ok(ModuleInfo {
            size,
            imports: hooks,
            functions: self.functions,
            initial_pages: memory.initial,
            max_pages: memory.maximum,
            exports: self.exports.iter().map(|e| e.name.to_string()).collect(),
            globals: self.globals,
            data_segments: self.data_segments,
            element_segments: self.element_segments,
            table_entries: self.table_entries,
            max_locals: self.max_locals,
            max_opcodes: self.max_opcodes,
        })
    }
}

/// Per-instruction rules: floats, feature-gated proposals, partial bulk memory, typed blocks.
fn check_operator(op: &Operator<'_>, func: u32, config: &Config) -> Result<(), ActivationError> {
    if let Operator::Block { blockty } | Operator::Loop { blockty } | Operator::If { blockty } = op
    {
        if matches!(blockty, BlockType::FuncType(_)) && !config.allow_multi_value {
            return Err(ActivationError::MultiValueBlock {
                op: ops::name(op),
                func,
            });
        }
    }
    match ops::proposal(op) {
        "mvp" | "sign_extension" | "saturating_float_to_int" => {
            if ops::is_float(op) {
                return Err(ActivationError::FloatInstruction {
                    op: ops::name(op),
                    func,
                });
            }
            Ok(())
        }
        "bulk_memory" => match op {
            Operator::MemoryCopy { .. } | Operator::MemoryFill { .. } => Ok(()),
            _ => Err(ActivationError::BulkMemoryOp {
                op: ops::name(op),
                func,
            }),
        },
        "reference_types" => Err(ActivationError::ReferenceTypes(format!(
            "{} in function {func}",
            ops::name(op)
        ))),
        proposal => Err(ActivationError::UnsupportedFeature {
            feature: feature_for(proposal),
            detail: format!("{} in function {func}", ops::name(op)),
        }),
    }
}
