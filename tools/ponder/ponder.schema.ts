import { onchainTable } from "ponder";

// One row per PaymentExecuted log: its position plus every decoded argument.
export const payment = onchainTable("payment", (t) => ({
  id: t.text().primaryKey(), // event.id: the log's checkpoint-derived unique id
  sessionId: t.bigint().notNull(),
  to: t.hex().notNull(),
  receiptId: t.bigint().notNull(),
  amount: t.bigint().notNull(),
  purpose: t.hex().notNull(),
  nonce: t.bigint().notNull(),
  blockNumber: t.bigint().notNull(),
  blockTimestamp: t.bigint().notNull(),
  logIndex: t.integer().notNull(),
  txHash: t.hex().notNull(),
}));
