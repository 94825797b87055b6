// EIP-712 hashing of `eth_signTypedData_v4` JSON, so that the page shows the digest of exactly
// what it hands the wallet, computed here rather than taken from the server.
import { concat, hexToBytes, keccak, utf8, word } from "./hex.js";

export interface TypedData {
  types: Record<string, { name: string; type: string }[]>;
  primaryType: string;
  domain: Record<string, unknown>;
  message: Record<string, unknown>;
}

function dependencies(types: TypedData["types"], type: string, found = new Set<string>()): Set<string> {
  const base = type.replace(/\[\d*\]$/, "");
  if (found.has(base) || !types[base]) return found;
  found.add(base);
  for (const field of types[base]) dependencies(types, field.type, found);
  return found;
}

function encodeType(types: TypedData["types"], type: string): string {
  const [primary, ...rest] = [...dependencies(types, type)];
  return [primary, ...rest.sort()]
    .map((t) => `${t}(${types[t].map((f) => `${f.type} ${f.name}`).join(",")})`)
    .join("");
}

function encodeValue(types: TypedData["types"], type: string, value: unknown): Uint8Array {
  const array = type.match(/^(.*)\[\d*\]$/);
  if (array) {
    const items = (value as unknown[]).map((v) => encodeValue(types, array[1], v));
    return keccak(concat(...items));
  }
  if (types[type]) return hashStruct(types, type, value as Record<string, unknown>);
  if (type === "string") return keccak(utf8(String(value)));
  if (type === "bytes") return keccak(hexToBytes(String(value)));
  if (type === "bool") return word(value === true || value === "true" ? 1n : 0n);
  if (type === "address") return word(BigInt(String(value)));
  if (/^u?int\d*$/.test(type)) return word(BigInt(value as string | number));
  if (/^bytes\d+$/.test(type)) {
    const b = hexToBytes(String(value));
    const out = new Uint8Array(32);
    out.set(b);
    return out;
  }
  throw new Error(`EIP-712 type ${type} is not supported`);
}

function hashStruct(types: TypedData["types"], type: string, value: Record<string, unknown>): Uint8Array {
  const typeHash = keccak(utf8(encodeType(types, type)));
  const fields = types[type].map((f) => encodeValue(types, f.type, value[f.name]));
  return keccak(concat(typeHash, ...fields));
}

/** The digest a wallet signs for `typed`: keccak256(0x1901 ‖ domainSeparator ‖ hashStruct(message)). */
export function digest(typed: TypedData): Uint8Array {
  const domain = hashStruct(typed.types, "EIP712Domain", typed.domain);
  const message = hashStruct(typed.types, typed.primaryType, typed.message);
  return keccak(concat(new Uint8Array([0x19, 0x01]), domain, message));
}
