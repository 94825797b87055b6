// Prints the address that signed an audit export's manifest, as the README tells an auditor
// to check it: EIP-191 personal_sign of keccak256 of the manifest's JSON without `signature`.
// Usage: node recover.mjs EXPORT.ndjson
import { readFileSync } from "node:fs";
import { keccak256, recoverMessageAddress, toBytes } from "viem";

const lines = readFileSync(process.argv[2], "utf8").trim().split("\n");
const { signature, ...manifest } = JSON.parse(lines[lines.length - 1]).manifest;
const message = { raw: keccak256(toBytes(JSON.stringify(manifest))) };
console.log(await recoverMessageAddress({ message, signature }));
