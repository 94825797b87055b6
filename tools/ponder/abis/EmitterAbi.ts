// Just the benchmark Emitter's event: the wallet's PaymentExecuted (e2e/benches/indexer.rs).
export const EmitterAbi = [
  {
    type: "event",
    name: "PaymentExecuted",
    anonymous: false,
    inputs: [
      { name: "sessionId", type: "uint256", indexed: true },
      { name: "to", type: "address", indexed: true },
      { name: "receiptId", type: "uint256", indexed: true },
      { name: "amount", type: "uint256", indexed: false },
      { name: "purpose", type: "bytes32", indexed: false },
      { name: "nonce", type: "uint256", indexed: false },
    ],
  },
] as const;
