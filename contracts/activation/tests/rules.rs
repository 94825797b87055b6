//! One test (at least) per activation rule: a tiny WAT module that breaks exactly that rule.

use stylus_activation::{
    hostio::VM_HOOKS_FNS, validate, validate_with, ActivationError as E, Config,
};

/// A minimal valid Stylus program plus `imports` (before the defaults) and `rest` (after).
/// Function 0 is `pay_for_memory_grow`, function 1 the entrypoint, unless `imports` adds more.
fn program(imports: &str, rest: &str) -> Vec<u8> {
    wat(&format!(
        r#"(module
            {imports}
            (import "vm_hooks" "pay_for_memory_grow" (func (param i32)))
            (memory (export "memory") 1)
            (func (export "user_entrypoint") (param i32) (result i32) i32.const 0)
            {rest})"#
    ))
}

fn wat(text: &str) -> Vec<u8> {
    wat::parse_str(text).unwrap_or_else(|e| panic!("bad test WAT: {e}\n{text}"))
}

fn err(wasm: &[u8]) -> E {
    validate(wasm).expect_err("module should be rejected")
}

#[test]
fn accepts_minimal_program() {
    let info = validate(&program("", "")).unwrap();
    assert_eq!(info.functions, 1);
    assert_eq!(info.initial_pages, 1);
    assert_eq!(info.max_pages, None);
    assert_eq!(info.imports.len(), 1);
    assert!(info.imports_hook("pay_for_memory_grow"));
    assert_eq!(info.exports, vec!["memory", "user_entrypoint"]);
}

#[test]
fn accepts_every_host_import_with_its_exact_signature() {
    let mut imports = String::new();
    for f in &VM_HOOKS_FNS {
        let tys =
            |t: &[stylus_activation::WasmTy]| t.iter().map(|t| format!(" {t}")).collect::<String>();
        imports += &format!(
            "(import \"{}\" \"{}\" (func (param{}) (result{})))\n",
            f.module,
            f.name,
            tys(f.params),
            tys(f.results)
        );
    }
    let wasm = wat(&format!(
        r#"(module {imports}
            (memory (export "memory") 1)
            (func (export "user_entrypoint") (param i32) (result i32) i32.const 0))"#
    ));
    let info = validate(&wasm).unwrap();
    assert_eq!(info.imports.len(), 42);
}

#[test]
fn accepts_bulk_memory_copy_and_fill_and_float_types_in_signatures() {
    let wasm = program(
        "",
        r#"(func (param f64) (result i32)
             (memory.copy (i32.const 0) (i32.const 8) (i32.const 8))
             (memory.fill (i32.const 0) (i32.const 0) (i32.const 8))
             (local.get 0) drop
             i32.const 0)"#,
    );
    validate(&wasm).unwrap();
}

#[test]
fn rejects_oversized_wasm() {
    let data = "a".repeat(140_000);
    let wasm = program("", &format!(r#"(data (i32.const 0) "{data}")"#));
    let e = err(&wasm);
    assert!(matches!(e, E::WasmTooLarge { limit: 131_072, .. }), "{e}");
    assert_eq!(
        e.to_string(),
        format!("uncompressed size {} exceeds 131072", wasm.len())
    );
}

#[test]
fn rejects_malformed_bytes() {
    assert!(matches!(err(b"\0asm\x01\0\0\0\x01"), E::Malformed(_)));
    assert!(matches!(err(b"not wasm"), E::Malformed(_)));
}

// ----- imports -----

#[test]
fn rejects_unknown_host_import() {
    let e = err(&program(r#"(import "vm_hooks" "foo" (func))"#, ""));
    assert_eq!(e.to_string(), "unsupported import vm_hooks::foo");
    assert!(matches!(e, E::UnsupportedImport { .. }));
}

#[test]
fn rejects_imports_from_other_modules() {
    let e = err(&program(
        r#"(import "env" "read_args" (func (param i32)))"#,
        "",
    ));
    assert!(
        matches!(e, E::UnsupportedImport { ref module, .. } if module == "env"),
        "{e}"
    );
}

#[test]
fn debug_imports_only_on_debug_chains() {
    let wasm = program(r#"(import "console" "log_txt" (func (param i32 i32)))"#, "");
    assert!(matches!(err(&wasm), E::UnsupportedImport { .. }));
    let debug = Config {
        debug_chain: true,
        ..Config::default()
    };
    validate_with(&wasm, &debug).unwrap();
}

#[test]
fn rejects_wrong_import_signature() {
    let e = err(&program(
        r#"(import "vm_hooks" "call_contract" (func (param i32 i32 i32 i32 i32 i32) (result i32)))"#,
        "",
    ));
    assert_eq!(
        e.to_string(),
        "wrong type for import vm_hooks::call_contract: (i32, i32, i32, i32, i32, i32) -> i32 \
         (expected (i32, i32, i32, i32, i64, i32) -> i32)"
    );
    assert!(matches!(e, E::ImportSignature { .. }));
}

#[test]
fn rejects_non_function_imports() {
    let e = err(&wat(r#"(module (import "vm_hooks" "memory" (memory 1))
            (func (export "user_entrypoint") (param i32) (result i32) i32.const 0))"#));
    assert!(
        matches!(e, E::UnsupportedImportKind { kind: "memory", .. }),
        "{e}"
    );
}

#[test]
fn growable_memory_requires_pay_for_memory_grow() {
    let growable = wat(r#"(module (memory (export "memory") 1)
        (func (export "user_entrypoint") (param i32) (result i32) i32.const 0))"#);
    assert_eq!(err(&growable), E::MissingPayForMemoryGrow);
    let fixed = wat(r#"(module (memory (export "memory") 1 1)
        (func (export "user_entrypoint") (param i32) (result i32) i32.const 0))"#);
    validate(&fixed).unwrap();
}

#[test]
fn rejects_too_many_imports() {
    let imports = r#"(import "vm_hooks" "msg_sender" (func (param i32)))"#.repeat(513);
    let e = err(&program(&imports, ""));
    assert_eq!(
        e,
        E::TooManyImports {
            count: 514,
            limit: 513
        }
    );
}

// ----- names -----

#[test]
fn rejects_reserved_import_and_export_names() {
    let e = err(&program(
        r#"(import "vm_hooks" "stylus_ink_left" (func))"#,
        "",
    ));
    assert_eq!(
        e.to_string(),
        "name starts with reserved prefix stylus: import stylus_ink_left"
    );
    let e = err(&program(
        "",
        r#"(global (export "stylus_start") i32 (i32.const 0))"#,
    ));
    assert!(matches!(e, E::ReservedName { kind: "export", .. }), "{e}");
    let e = err(&program(
        "",
        r#"(global (export "x__stylus_y") i32 (i32.const 0))"#,
    ));
    assert!(matches!(e, E::ReservedName { kind: "export", .. }), "{e}");
}

#[test]
fn rejects_exporting_an_import_name() {
    let e = err(&program(
        r#"(import "vm_hooks" "read_args" (func $read (param i32)))"#,
        r#"(export "read_args" (func $read))"#,
    ));
    assert_eq!(e.to_string(), "export re-exports import name read_args");
    let e = err(&program(
        r#"(import "vm_hooks" "msg_value" (func (param i32)))"#,
        r#"(func (export "mod__msg_value"))"#,
    ));
    assert!(matches!(e, E::ExportShadowsImport { .. }), "{e}");
}

#[test]
fn rejects_long_export_and_module_names() {
    let long = "x".repeat(513);
    let e = err(&program("", &format!(r#"(func (export "{long}"))"#)));
    assert_eq!(
        e,
        E::NameTooLong {
            kind: "export",
            len: 513,
            limit: 512
        }
    );
    let ok = "x".repeat(512);
    validate(&program("", &format!(r#"(func (export "{ok}"))"#))).unwrap();

    let wasm = wat(&format!(
        r#"(module ${long}
            (import "vm_hooks" "pay_for_memory_grow" (func (param i32)))
            (memory (export "memory") 1)
            (func (export "user_entrypoint") (param i32) (result i32) i32.const 0))"#
    ));
    assert!(matches!(err(&wasm), E::NameTooLong { kind: "module", .. }));
}

// ----- memory, entrypoint, start -----

#[test]
fn rejects_missing_or_unexported_memory() {
    let none =
        wat(r#"(module (func (export "user_entrypoint") (param i32) (result i32) i32.const 0))"#);
    assert_eq!(err(&none), E::MissingMemory);
    let hidden = wat(r#"(module (memory (export "mem") 1 1)
        (func (export "user_entrypoint") (param i32) (result i32) i32.const 0))"#);
    assert_eq!(
        err(&hidden).to_string(),
        "missing memory with export name \"memory\""
    );
}

#[test]
fn rejects_two_memories() {
    let wasm = wat(r#"(module
        (import "vm_hooks" "pay_for_memory_grow" (func (param i32)))
        (memory (export "memory") 1) (memory 1)
        (func (export "user_entrypoint") (param i32) (result i32) i32.const 0))"#);
    assert_eq!(err(&wasm), E::TooManyMemories { count: 2 });
}

#[test]
fn rejects_too_much_initial_memory() {
    let wasm = wat(r#"(module
        (import "vm_hooks" "pay_for_memory_grow" (func (param i32)))
        (memory (export "memory") 200)
        (func (export "user_entrypoint") (param i32) (result i32) i32.const 0))"#);
    let e = err(&wasm);
    assert_eq!(e.to_string(), "initial memory 200 pages exceeds 128");
    let at_limit = wat(r#"(module
        (import "vm_hooks" "pay_for_memory_grow" (func (param i32)))
        (memory (export "memory") 128)
        (func (export "user_entrypoint") (param i32) (result i32) i32.const 0))"#);
    validate(&at_limit).unwrap();
}

#[test]
fn rejects_missing_entrypoint() {
    let wasm = wat(r#"(module (memory (export "memory") 1 1)
        (func (export "main") (param i32) (result i32) i32.const 0))"#);
    let e = err(&wasm);
    assert_eq!(e, E::MissingEntrypoint);
    assert_eq!(e.to_string(), "missing export user_entrypoint");
}

#[test]
fn rejects_entrypoint_with_wrong_type() {
    let wasm = wat(r#"(module (memory (export "memory") 1 1)
        (func (export "user_entrypoint") (param i64) (result i32) i32.const 0))"#);
    let e = err(&wasm);
    assert!(matches!(e, E::WrongEntrypointType { .. }));
    assert_eq!(
        e.to_string(),
        "wrong type for user_entrypoint: (i64) -> i32 (expected (i32) -> i32)"
    );
    let global = wat(r#"(module (memory (export "memory") 1 1)
        (global (export "user_entrypoint") i32 (i32.const 0)))"#);
    assert!(matches!(err(&global), E::EntrypointNotFunction { .. }));
}

#[test]
fn rejects_start_function() {
    let e = err(&program("", "(func $init) (start $init)"));
    assert_eq!(e, E::StartFunction);
    assert_eq!(e.to_string(), "start function not allowed");
}

// ----- instructions and features -----

#[test]
fn rejects_float_instructions() {
    let e = err(&program(
        "",
        "(func (param f64 f64) (result f64) (f64.add (local.get 0) (local.get 1)))",
    ));
    assert_eq!(e.to_string(), "float instruction f64.add in function 2");
    for body in [
        "(drop (f32.const 1))",
        "(drop (f64.load (i32.const 0)))",
        "(drop (i32.trunc_sat_f32_s (local.get 0)))",
        "(drop (i32.reinterpret_f32 (local.get 0)))",
    ] {
        let wasm = program("", &format!("(func (param f32) {body})"));
        assert!(
            matches!(err(&wasm), E::FloatInstruction { func: 2, .. }),
            "{body}"
        );
    }
}

#[test]
fn rejects_reference_types() {
    let cases = [
        "(table 1 externref)",
        "(table 1 funcref) (table 1 funcref)",
        "(func (param funcref))",
        "(func (drop (ref.null func)))",
        "(func (result i32) (select (result i32) (i32.const 1) (i32.const 2) (i32.const 0)))",
    ];
    for case in cases {
        let e = err(&program("", case));
        assert!(matches!(e, E::ReferenceTypes(_)), "{case}: {e}");
        assert!(e.to_string().starts_with("reference types are not allowed"));
    }
}

#[test]
fn rejects_multi_value_function_types() {
    let wasm = program("", "(func (result i32 i32) i32.const 1 i32.const 2)");
    let e = err(&wasm);
    assert!(matches!(e, E::MultiValueFuncType { .. }));
    assert!(
        e.to_string()
            .starts_with("multi-value function type () -> (i32, i32)"),
        "{e}"
    );
    let old = Config {
        allow_multi_value: true,
        ..Config::default()
    };
    validate_with(&wasm, &old).unwrap();
}

#[test]
fn rejects_typed_blocks() {
    let wasm = program(
        "",
        "(func (param i32) (result i32) local.get 0 (block (param i32) (result i32)))",
    );
    assert_eq!(
        err(&wasm),
        E::MultiValueBlock {
            op: "block".into(),
            func: 2
        }
    );
    // A plain single-result block is fine.
    validate(&program(
        "",
        "(func (result i32) (block (result i32) i32.const 1))",
    ))
    .unwrap();
}

#[test]
fn rejects_bulk_memory_beyond_copy_and_fill() {
    let e = err(&program(
        "",
        r#"(data $d "hi") (func (memory.init $d (i32.const 0) (i32.const 0) (i32.const 2)))"#,
    ));
    assert_eq!(
        e.to_string(),
        "bulk-memory op memory.init not supported (function 2); only memory.copy and memory.fill are"
    );
    let e = err(&program("", r#"(data $d "hi") (func (data.drop $d))"#));
    assert!(matches!(e, E::BulkMemoryOp { ref op, .. } if op == "data.drop"));
}

#[test]
fn rejects_other_proposals() {
    let cases = [
        ("(func (drop (v128.const i64x2 0 0)))", "SIMD"),
        ("(func (drop (i32.atomic.load (i32.const 0))))", "threads"),
        (
            "(func (result i32) (return_call 1 (i32.const 0)))",
            "tail calls",
        ),
        ("(tag $t)", "exception handling"),
        ("(type (struct))", "GC / typed function references"),
    ];
    for (case, feature) in cases {
        let e = err(&program("", case));
        assert!(
            matches!(e, E::UnsupportedFeature { feature: f, .. } if f == feature),
            "{case}: {e}"
        );
    }
    let mem64 = wat(r#"(module (memory (export "memory") i64 1 1)
        (func (export "user_entrypoint") (param i32) (result i32) i32.const 0))"#);
    assert!(matches!(
        err(&mem64),
        E::UnsupportedFeature {
            feature: "memory64",
            ..
        }
    ));
}

#[test]
fn rejects_extended_const_globals() {
    let e = err(&program(
        "",
        "(global i32 (i32.add (i32.const 1) (i32.const 2)))",
    ));
    assert_eq!(e, E::NonConstantGlobal { index: 0 });
}

// ----- counting limits -----

#[test]
fn rejects_too_many_functions() {
    let e = err(&program("", &"(func)".repeat(4096)));
    assert_eq!(
        e,
        E::TooManyFunctions {
            count: 4097,
            limit: 4096
        }
    );
    assert!(e.to_string().starts_with("too many functions"));
    validate(&program("", &"(func)".repeat(4095))).unwrap();
}

#[test]
fn rejects_too_many_data_segments() {
    let e = err(&program("", &r#"(data (i32.const 0) "x")"#.repeat(129)));
    assert_eq!(
        e,
        E::TooManyDataSegments {
            count: 129,
            limit: 128
        }
    );
}

#[test]
fn rejects_too_many_element_segments() {
    let elems = "(elem (i32.const 0) func 1)".repeat(129);
    let e = err(&program("", &format!("(table 1 funcref) {elems}")));
    assert_eq!(
        e,
        E::TooManyElementSegments {
            count: 129,
            limit: 128
        }
    );
}

#[test]
fn rejects_too_many_exports() {
    let exports: String = (0..1023)
        .map(|i| format!(r#"(export "e{i}" (func 1))"#))
        .collect();
    let e = err(&program("", &exports));
    assert_eq!(
        e,
        E::TooManyExports {
            count: 1025,
            limit: 1024
        }
    );
}

#[test]
fn rejects_too_many_globals() {
    // 32,769 globals need > 128 KiB, so lift the size limit to reach the globals rule.
    let wasm = program("", &"(global i32 (i32.const 0))".repeat(32_769));
    let roomy = Config {
        max_wasm_size: usize::MAX,
        ..Config::default()
    };
    let e = validate_with(&wasm, &roomy).unwrap_err();
    assert_eq!(
        e,
        E::TooManyGlobals {
            count: 32_769,
            limit: 32_768
        }
    );
}

#[test]
fn rejects_too_many_locals() {
    let ok = program("", &format!("(func (local{}))", " i32".repeat(348)));
    validate(&ok).unwrap();
    let e = err(&program(
        "",
        &format!("(func (local{}))", " i64".repeat(349)),
    ));
    assert_eq!(
        e,
        E::TooManyLocals {
            func: 2,
            count: 349,
            limit: 348
        }
    );
}

#[test]
fn rejects_too_many_opcodes() {
    // 65,536 nops + the closing `end` = 65,537 operators.
    let e = err(&program("", &format!("(func {})", "nop ".repeat(65_536))));
    assert_eq!(
        e,
        E::TooManyOpcodes {
            func: 2,
            count: 65_537,
            limit: 65_536
        }
    );
}

#[test]
fn rejects_too_many_table_entries() {
    validate(&program("", "(table 4096 funcref)")).unwrap();
    let e = err(&program("", "(table 4097 funcref)"));
    assert_eq!(
        e,
        E::TooManyTableEntries {
            count: 4097,
            limit: 4096
        }
    );
}

#[test]
fn rejects_too_many_element_entries() {
    let funcs = " 1".repeat(4100);
    let e = err(&program(
        "",
        &format!("(table 4096 funcref) (elem (i32.const 0) func{funcs})"),
    ));
    assert!(
        matches!(e, E::TooManyElementEntries { limit: 4096, .. }),
        "{e}"
    );
}
