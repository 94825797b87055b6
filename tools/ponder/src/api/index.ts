import { db } from "ponder:api";
import schema from "ponder:schema";
import { Hono } from "hono";
import { count } from "ponder";

// Ponder 0.16 requires this file. Only a row count for the benchmark: no GraphQL (whose
// middleware writes generated/schema.graphql into the working directory).
const app = new Hono();

// GET /count -> {"payment": <rows in the payment table>}
app.get("/count", async (c) => {
  const [row] = await db.select({ n: count() }).from(schema.payment);
  return c.json({ payment: row?.n ?? 0 });
});

export default app;
