//! Deploy-code format: brotli, the EFF00000 prefix, the initcode prelude, size limit, stripping.

use stylus_activation::{
    check_code_size, compress, contract_code, decompress, deploy_initcode, strip_custom_sections,
    strip_stylus_prefix, validate, ActivationError, MAX_CODE_SIZE,
};
use wasmparser::{Parser, Payload};

fn sample_wasm() -> Vec<u8> {
    wat::parse_str(
        r#"(module $sample
            (import "vm_hooks" "pay_for_memory_grow" (func (param i32)))
            (memory (export "memory") 1)
            (func $entry (export "user_entrypoint") (param i32) (result i32) i32.const 0)
            (@custom "project_hash" "0123456789abcdef0123456789abcdef")
            (@producers (language "Rust" "1.96")))"#,
    )
    .unwrap()
}

fn custom_sections(wasm: &[u8]) -> Vec<String> {
    Parser::new(0)
        .parse_all(wasm)
        .filter_map(|p| match p.unwrap() {
            Payload::CustomSection(c) => Some(c.name().to_string()),
            _ => None,
        })
        .collect()
}

#[test]
fn compress_round_trips_with_brotli() {
    let wasm = sample_wasm();
    let compressed = compress(&wasm);
    assert_ne!(compressed, wasm);
    assert_eq!(decompress(&compressed, 131_072).unwrap(), wasm);
    // Also with the plain brotli decoder, as nitro would.
    let mut out = Vec::new();
    brotli::BrotliDecompress(&mut compressed.as_slice(), &mut out).unwrap();
    assert_eq!(out, wasm);
    // Bigger, compressible input really shrinks.
    let big = vec![7u8; 100_000];
    assert!(compress(&big).len() < 1000);
    assert!(decompress(&compress(&big), 99_999).is_err());
}

#[test]
fn contract_code_has_stylus_prefix() {
    let wasm = sample_wasm();
    let code = contract_code(&wasm);
    assert_eq!(&code[..4], &[0xEF, 0xF0, 0x00, 0x00]);
    let (dict, compressed) = strip_stylus_prefix(&code).unwrap();
    assert_eq!(dict, 0);
    assert_eq!(decompress(compressed, 131_072).unwrap(), wasm);
    assert!(strip_stylus_prefix(&[0x60, 0x80]).is_none());
}

#[test]
fn deploy_initcode_prelude_matches_cargo_stylus() {
    let code = [0xEF, 0xF0, 0x00, 0x00, 0xAA, 0xBB, 0xCC];
    let initcode = deploy_initcode(&code);
    let mut expected = vec![0x7f];
    expected.extend([0u8; 31]);
    expected.push(7); // len(code), prefix included
    expected.extend([0x80, 0x60, 0x2b, 0x60, 0x00, 0x39, 0x60, 0x00, 0xf3, 0x00]);
    assert_eq!(expected.len(), 43);
    expected.extend(code);
    assert_eq!(initcode, expected);

    // Length is big-endian over the full 32 bytes.
    let long = vec![0u8; 0x1_0203];
    let initcode = deploy_initcode(&long);
    assert_eq!(&initcode[30..33], &[0x01, 0x02, 0x03]);
    assert_eq!(initcode.len(), 43 + long.len());
}

#[test]
fn code_size_limit_includes_prefix() {
    assert_eq!(MAX_CODE_SIZE, 24_576);
    check_code_size(&vec![0; 24_576]).unwrap();
    let e = check_code_size(&vec![0; 24_577]).unwrap_err();
    assert_eq!(
        e,
        ActivationError::CodeTooLarge {
            size: 24_577,
            limit: 24_576
        }
    );
    // A tiny program is far below the limit.
    check_code_size(&contract_code(&sample_wasm())).unwrap();
}

#[test]
fn strip_custom_sections_removes_all_and_keeps_module_valid() {
    let wasm = sample_wasm();
    let before = custom_sections(&wasm);
    assert!(before.contains(&"project_hash".to_string()), "{before:?}");
    assert!(before.contains(&"name".to_string()), "{before:?}");
    assert!(before.contains(&"producers".to_string()), "{before:?}");

    let stripped = strip_custom_sections(&wasm);
    assert!(custom_sections(&stripped).is_empty());
    assert!(stripped.len() < wasm.len());
    validate(&stripped).unwrap();
    // Idempotent, and malformed input comes back untouched.
    assert_eq!(strip_custom_sections(&stripped), stripped);
    assert_eq!(strip_custom_sections(b"junk"), b"junk");
}
