import { ponder } from "ponder:registry";
import { payment } from "ponder:schema";

ponder.on("Emitter:PaymentExecuted", async ({ event, context }) => {
  await context.db.insert(payment).values({
    id: event.id,
    sessionId: event.args.sessionId,
    to: event.args.to,
    receiptId: event.args.receiptId,
    amount: event.args.amount,
    purpose: event.args.purpose,
    nonce: event.args.nonce,
    blockNumber: event.block.number,
    blockTimestamp: event.block.timestamp,
    logIndex: event.log.logIndex,
    txHash: event.transaction.hash,
  });
});
