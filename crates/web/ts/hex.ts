// Bytes and hex, and keccak-256 (noble's, bundled).
import { keccak_256 } from "@noble/hashes/sha3.js";

export function hexToBytes(hex: string): Uint8Array {
  const h = hex.startsWith("0x") || hex.startsWith("0X") ? hex.slice(2) : hex;
  if (h.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(h)) {
    throw new Error(`not hex: ${hex.slice(0, 20)}`);
  }
  const out = new Uint8Array(h.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(h.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function bytesToHex(bytes: Uint8Array): string {
  let s = "0x";
  for (const b of bytes) s += b.toString(16).padStart(2, "0");
  return s;
}

export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);

export const keccak = (bytes: Uint8Array): Uint8Array => keccak_256(bytes);

/** A 32-byte big-endian word of a non-negative or two's-complement integer. */
export function word(value: bigint): Uint8Array {
  const v = value < 0n ? (1n << 256n) + value : value;
  return hexToBytes(v.toString(16).padStart(64, "0"));
}
