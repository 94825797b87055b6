import { createConfig } from "ponder";

import { EmitterAbi } from "./abis/EmitterAbi";

// Everything comes from the environment the benchmark sets (see README.md).
const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined || value === "") {
    throw new Error(`${name} must be set (see tools/ponder/README.md)`);
  }
  return value;
};

export default createConfig({
  // PostgreSQL when DATABASE_URL is set, else PGlite in PONDER_PGLITE_DIR (default
  // .ponder/pglite, ponder's own). Explicit so that DATABASE_PRIVATE_URL, which ponder would
  // otherwise prefer, is ignored.
  database: process.env.DATABASE_URL
    ? { kind: "postgres", connectionString: process.env.DATABASE_URL }
    : { kind: "pglite", directory: process.env.PONDER_PGLITE_DIR || undefined },
  chains: {
    anvil: {
      id: 31337,
      rpc: env("PONDER_RPC_URL"),
      // Ponder's defaults otherwise: pollingInterval 1 s, eth_getLogs block range found
      // adaptively, no request-rate cap (maxRequestsPerSecond is deprecated and ignored in 0.16).
    },
  },
  contracts: {
    Emitter: {
      chain: "anvil",
      abi: EmitterAbi,
      address: env("PONDER_ADDRESS") as `0x${string}`,
      startBlock: Number(env("PONDER_START_BLOCK")),
    },
  },
});
