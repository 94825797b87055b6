// Checks an audit export (NDJSON or CSV, as the indexer serves it) in the browser: each row's
// place in the hash chain, the manifest's count and last hash, and the manifest's signature.
// The rule is the indexer's (`indexer/src/audit`): hash = keccak256(prevHash ‖ keccak256(JSON of
// the row's content)), the content being the row without `prevHash` and `hash`, serialized
// compactly in the indexer's field order; the manifest is signed EIP-191 over
// keccak256(its JSON without `signature`).
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { bytesToHex, concat, hexToBytes, keccak, utf8 } from "./hex.js";

export interface Verdict {
  ok: boolean;
  /** What was checked, or the first thing wrong. */
  message: string;
  rows: number;
  /** The first bad row's `index`, when a row is to blame. */
  badRow?: number;
  signer?: string;
  sessionId?: string;
}

const ZERO = "0x" + "0".repeat(64);
const HASH = "0x[0-9a-f]{64}";
const TAIL = new RegExp(`,"prevHash":"(${HASH})","hash":"(${HASH})"\\}$`);
export const CSV_HEADER =
  "index,chainId,blockNumber,blockHash,blockTimestamp,txHash,logIndex,address,event,args,topics,data,prevHash,hash";

interface Row {
  line: number;
  index: string;
  content: string;
  prevHash: string;
  hash: string;
}

class Bad extends Error {
  constructor(message: string, readonly row?: number) {
    super(message);
  }
}

/** The hash of `content` (its JSON text) following `prev`. */
export function link(prev: string, content: string): string {
  return bytesToHex(keccak(concat(hexToBytes(prev), keccak(utf8(content)))));
}

function ndjsonRow(text: string, line: number): Row {
  const tail = TAIL.exec(text);
  let parsed: { index?: unknown };
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Bad(`line ${line} is not JSON`);
  }
  if (!tail) throw new Bad(`line ${line} does not end in prevHash and hash`, Number(parsed.index));
  return {
    line,
    index: String(parsed.index),
    content: text.slice(0, tail.index) + "}",
    prevHash: tail[1],
    hash: tail[2],
  };
}

/** The fields of one CSV line (RFC 4180 quoting). */
export function csvFields(text: string): string[] {
  const out: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      out.push(field);
      field = "";
    } else field += c;
  }
  out.push(field);
  return out;
}

function csvRow(text: string, line: number): Row {
  const f = csvFields(text);
  if (f.length !== 14) throw new Bad(`line ${line} has ${f.length} columns, not 14`, Number(f[0]));
  const [index, chainId, blockNumber, blockHash, blockTimestamp, txHash, logIndex, address, event, args, topics, data, prevHash, hash] = f;
  for (const [name, v] of [["index", index], ["chainId", chainId], ["blockNumber", blockNumber], ["blockTimestamp", blockTimestamp], ["logIndex", logIndex]]) {
    if (!/^(0|[1-9]\d*)$/.test(v)) throw new Bad(`line ${line}: ${name} ${JSON.stringify(v)} is not a number`, Number(index));
  }
  if (args !== "") {
    try {
      JSON.parse(args);
    } catch {
      throw new Bad(`line ${line}: args is not JSON`, Number(index));
    }
  }
  const s = JSON.stringify;
  const topicList = topics === "" ? [] : topics.split(" ");
  const content =
    `{"index":${index},"chainId":${chainId},"blockNumber":${blockNumber},"blockHash":${s(blockHash)},` +
    `"blockTimestamp":${blockTimestamp},"txHash":${s(txHash)},"logIndex":${logIndex},"address":${s(address)},` +
    `"topics":${s(topicList)},"data":${s(data)},"event":${event === "" ? "null" : s(event)},` +
    `"args":${args === "" ? "null" : args}}`;
  return { line, index, content, prevHash, hash };
}

interface Manifest {
  sessionId: string;
  rows: number;
  lastHash: string;
  signer: string;
  signature?: string;
}

/** The signer the manifest's signature recovers to (EIP-55 is not needed: compared lowercased). */
function recoverSigner(manifestText: string, signature: string): string {
  const unsigned = manifestText.replace(/,"signature":"0x[0-9a-f]*"\}$/, "}");
  if (unsigned === manifestText) throw new Bad("the manifest has no signature at its end");
  const message = keccak(utf8(unsigned));
  const prefixed = keccak(concat(utf8("\x19Ethereum Signed Message:\n32"), message));
  const sig = hexToBytes(signature);
  if (sig.length !== 65 || (sig[64] !== 27 && sig[64] !== 28)) {
    throw new Bad("the manifest's signature is not 65 bytes ending in v = 27 or 28");
  }
  const recovered = concat(new Uint8Array([sig[64] - 27]), sig.subarray(0, 64));
  let point: Uint8Array;
  try {
    point = secp256k1.Signature.fromBytes(recovered, "recovered").recoverPublicKey(prefixed).toBytes(false);
  } catch {
    throw new Bad("the manifest's signature is not a secp256k1 signature");
  }
  return bytesToHex(keccak(point.subarray(1)).subarray(12));
}

/**
 * Verifies export `text`. `expectedSigner`: the export key of the indexer that serves this
 * page; `expectedSession`: the session the page shows.
 */
export function verifyExport(text: string, expectedSigner: string, expectedSession?: string): Verdict {
  let rows = 0;
  try {
    const lines = text.split("\n").map((l, i) => [l.replace(/\r$/, ""), i + 1] as const).filter(([l]) => l.trim() !== "");
    if (lines.length === 0) throw new Bad("the file is empty");
    const csv = lines[0][0] === CSV_HEADER;
    const body = csv ? lines.slice(1) : lines;
    const last = body[body.length - 1];
    if (!last) throw new Bad("no manifest: the export is cut short");
    const manifestLine = csv ? last[0].replace(/^# /, "") : last[0];
    if (!manifestLine.startsWith('{"manifest":{') || !manifestLine.endsWith("}}")) {
      throw new Bad("no manifest on the last line: the export is cut short");
    }
    const manifestText = manifestLine.slice('{"manifest":'.length, -1);
    let manifest: Manifest;
    try {
      manifest = JSON.parse(manifestText);
    } catch {
      throw new Bad("the manifest is not JSON");
    }
    let prev = ZERO;
    for (const [i, [l, line]] of body.slice(0, -1).entries()) {
      const row = csv ? csvRow(l, line) : ndjsonRow(l, line);
      const index = Number(row.index);
      if (row.index !== String(i)) {
        throw new Bad(`row ${row.index} (line ${line}) is at position ${i}: rows are missing or out of order`, index);
      }
      if (row.prevHash !== prev) {
        throw new Bad(`row ${i} (line ${line}): prevHash is not the previous row's hash: a row before it is missing or altered`, index);
      }
      if (link(prev, row.content) !== row.hash) {
        throw new Bad(`row ${i} (line ${line}) was altered: its hash does not match its content`, index);
      }
      prev = row.hash;
      rows++;
    }
    if (manifest.rows !== rows || manifest.lastHash !== prev) {
      throw new Bad(`the manifest says ${manifest.rows} rows ending in ${manifest.lastHash}, the file has ${rows} ending in ${prev}: rows were removed or added at the end`);
    }
    if (!manifest.signature) throw new Bad("the manifest is not signed");
    const signer = recoverSigner(manifestText, manifest.signature);
    if (signer !== manifest.signer.toLowerCase()) {
      throw new Bad(`the signature is ${signer}'s, the manifest names ${manifest.signer}: the manifest or its signature was altered`);
    }
    if (signer !== expectedSigner.toLowerCase()) {
      throw new Bad(`signed by ${manifest.signer}, not by this indexer's export key ${expectedSigner}`);
    }
    if (expectedSession && manifest.sessionId !== expectedSession) {
      throw new Bad(`this is an export of session ${manifest.sessionId}, not of this page's session`);
    }
    return {
      ok: true,
      rows,
      signer: manifest.signer,
      sessionId: manifest.sessionId,
      message: `Verified: ${rows} rows chained from the first to the manifest's last hash, signed by this indexer's key ${manifest.signer}.`,
    };
  } catch (e) {
    if (e instanceof Bad) return { ok: false, rows, message: e.message, badRow: e.row };
    return { ok: false, rows, message: `could not read the file: ${(e as Error).message}` };
  }
}
