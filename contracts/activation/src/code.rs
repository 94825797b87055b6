//! On-chain code format: brotli compression, the `EF F0 00 00` Stylus prefix, the deploy
//! initcode prelude, the code-size limit and custom-section stripping (host ABI reference §3).

use std::io::{Read, Write};

use crate::ActivationError;

/// Chain `MaxCodeSize` default: compressed wasm + 4-byte prefix must fit (else fragments).
pub const MAX_CODE_SIZE: usize = 24_576;
/// `EF F0 00` (Stylus discriminant, classic program) + `00` (no dictionary).
pub const STYLUS_PREFIX: [u8; 4] = [0xEF, 0xF0, 0x00, 0x00];
/// Brotli quality used by cargo-stylus.
pub const BROTLI_QUALITY: u32 = 11;
/// Brotli window (`BROTLI_DEFAULT_WINDOW`).
pub const BROTLI_LGWIN: u32 = 22;
/// Length of the initcode prelude produced by [`deploy_initcode`].
pub const DEPLOY_PRELUDE_LEN: usize = 43;

/// Brotli-compresses `wasm` with quality 11 and window 22, as cargo-stylus does.
pub fn compress(wasm: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(wasm.len() / 2);
    {
        let mut writer =
            brotli::CompressorWriter::new(&mut out, 4096, BROTLI_QUALITY, BROTLI_LGWIN);
        writer
            .write_all(wasm)
            .expect("writing to a Vec cannot fail");
        writer.flush().expect("writing to a Vec cannot fail");
    }
    out
}

/// Decompresses brotli data, refusing to produce more than `max_len` bytes.
pub fn decompress(data: &[u8], max_len: usize) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let reader = brotli::Decompressor::new(data, 4096);
    reader.take(max_len as u64 + 1).read_to_end(&mut out)?;
    if out.len() > max_len {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("decompressed size exceeds {max_len}"),
        ));
    }
    Ok(out)
}

/// The contract code stored on chain: `EF F0 00 00 || brotli(wasm)`.
pub fn contract_code(wasm: &[u8]) -> Vec<u8> {
    let compressed = compress(wasm);
    let mut code = Vec::with_capacity(STYLUS_PREFIX.len() + compressed.len());
    code.extend_from_slice(&STYLUS_PREFIX);
    code.extend_from_slice(&compressed);
    code
}

/// Splits contract code into `(dictionary byte, compressed wasm)` if it has the classic Stylus
/// prefix (`EF F0 00`, nitro `IsStylusProgram` / `StripStylusPrefix`).
pub fn strip_stylus_prefix(code: &[u8]) -> Option<(u8, &[u8])> {
    (code.len() >= 4 && code[..3] == STYLUS_PREFIX[..3]).then(|| (code[3], &code[4..]))
}

/// Errors when `code` (prefix included) is larger than [`MAX_CODE_SIZE`].
pub fn check_code_size(code: &[u8]) -> Result<(), ActivationError> {
    if code.len() > MAX_CODE_SIZE {
        return Err(ActivationError::CodeTooLarge {
            size: code.len(),
            limit: MAX_CODE_SIZE,
        });
    }
    Ok(())
}

/// EVM initcode that deploys `code` verbatim (cargo-stylus `DeploymentCalldata::new`):
/// `PUSH32 len; DUP1; PUSH1 43; PUSH1 0; CODECOPY; PUSH1 0; RETURN; 00` followed by `code`.
pub fn deploy_initcode(code: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(DEPLOY_PRELUDE_LEN + code.len());
    out.push(0x7f); // PUSH32
    let mut len = [0u8; 32];
    len[24..].copy_from_slice(&(code.len() as u64).to_be_bytes());
    out.extend_from_slice(&len);
    out.extend_from_slice(&[
        0x80, // DUP1
        0x60,
        DEPLOY_PRELUDE_LEN as u8, // PUSH1 43
        0x60,
        0x00, // PUSH1 0
        0x39, // CODECOPY
        0x60,
        0x00, // PUSH1 0
        0xf3, // RETURN
        0x00, // version byte, never executed
    ]);
    debug_assert_eq!(out.len(), DEPLOY_PRELUDE_LEN);
    out.extend_from_slice(code);
    out
}

/// Removes every custom section (id 0) from a wasm module, keeping all other sections byte for
/// byte. Input that is not a well-formed sequence of sections is returned unchanged (validation
/// will then report it).
pub fn strip_custom_sections(wasm: &[u8]) -> Vec<u8> {
    try_strip_custom_sections(wasm).unwrap_or_else(|| wasm.to_vec())
}

fn try_strip_custom_sections(wasm: &[u8]) -> Option<Vec<u8>> {
    const HEADER: usize = 8;
    if wasm.len() < HEADER || wasm[..4] != *b"\0asm" {
        return None;
    }
    let mut out = Vec::with_capacity(wasm.len());
    out.extend_from_slice(&wasm[..HEADER]);
    let mut pos = HEADER;
    while pos < wasm.len() {
        let start = pos;
        let id = wasm[pos];
        pos += 1;
        let (size, leb_len) = read_leb_u32(&wasm[pos..])?;
        pos += leb_len;
        let end = pos.checked_add(size as usize)?;
        if end > wasm.len() {
            return None;
        }
        if id != 0 {
            out.extend_from_slice(&wasm[start..end]);
        }
        pos = end;
    }
    Some(out)
}

fn read_leb_u32(bytes: &[u8]) -> Option<(u32, usize)> {
    let mut result: u32 = 0;
    for (i, &byte) in bytes.iter().enumerate().take(5) {
        let bits = u32::from(byte & 0x7f);
        if i == 4 && bits > 0x0f {
            return None;
        }
        result |= bits << (7 * i);
        if byte & 0x80 == 0 {
            return Some((result, i + 1));
        }
    }
    None
}
