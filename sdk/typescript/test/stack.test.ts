// The SDK against a running `bursar up` (apps/bursar/tests/sdk.rs starts it and passes where
// everything is): a host prepares, the owner signs with viem, the session opens; the sandbox
// reads its limits, pays (once under a retried key), is refused by the rules with their codes,
// heart-beats, records provenance and pays an x402 server built with x402's own packages; the
// host's webhook deliveries verify with standardwebhooks; revoked, the token stops working.
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { beforeAll, describe, expect, it } from "vitest";
import type { Address } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { BursarError, HostClient, IndexerClient, SandboxClient, signPrepared, verifyWebhook } from "../src/index.js";
import * as devnet from "./devnet.js";
import { env } from "./devnet.js";

const stack = process.env.BURSAR_RELAYER_URL ? describe : describe.skip;

stack("against bursar up", () => {
  const relayer = () => env("BURSAR_RELAYER_URL");
  let host: HostClient;
  let sandbox: SandboxClient;
  let sessionId: string;
  let usdc: Address;
  let payee: Address;
  const stranger = privateKeyToAccount(generatePrivateKey()).address;
  const balance = devnet.balance;

  // The host's webhook receiver: every delivery, and a way to wait for one.
  const deliveries: { headers: Record<string, string>; body: string }[] = [];
  const waiting: ((d: { headers: Record<string, string>; body: string }) => void)[] = [];
  const receiver = createServer((req: IncomingMessage, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const d = { headers: req.headers as Record<string, string>, body };
      deliveries.push(d);
      waiting.splice(0).forEach((w) => w(d));
      res.writeHead(204).end();
    });
  });
  const delivery = (type: string) =>
    new Promise<{ headers: Record<string, string>; body: string }>((resolve, reject) => {
      const found = deliveries.find((d) => JSON.parse(d.body).type === type);
      if (found) return resolve(found);
      const timer = setTimeout(() => reject(new Error(`no ${type} delivery within 30 s`)), 30_000);
      const look = (d: { headers: Record<string, string>; body: string }) => {
        if (JSON.parse(d.body).type === type) {
          clearTimeout(timer);
          resolve(d);
        } else waiting.push(look);
      };
      waiting.push(look);
    });
  let secret = "";

  beforeAll(async () => {
    usdc = devnet.usdc();
    payee = env("X402_PAY_TO") as Address;
    const owner = await devnet.fundedOwner(50_000_000n);
    const listId = await devnet.allowlist([payee], "reports");

    host = new HostClient({ baseUrl: relayer(), apiKey: env("BURSAR_HOST_KEY") });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    const port = (receiver.address() as AddressInfo).port;
    const endpoint = await host.createWebhook({ url: `http://127.0.0.1:${port}/hooks`, events: ["session.opened", "payment.updated"] });
    secret = endpoint.secret!;
    expect(secret).toMatch(/^whsec_/);

    // Prepare → the owner signs in their wallet (viem) → open.
    const now = await devnet.chainNow();
    const prepared = await host.prepareSession({
      owner: owner.address,
      token: usdc,
      deposit: "50000000",
      perPaymentCap: "20000000",
      periodBudget: "30000000",
      periodSeconds: 3600,
      expiresAt: now + 86_400,
      allowlistId: listId,
      metadata: "sdk test",
    });
    const opened = await host.openSession(await signPrepared(owner, prepared));
    expect(opened.status).toBe("open");
    sessionId = opened.sessionId;
    sandbox = new SandboxClient({ baseUrl: relayer(), capabilityToken: opened.capabilityToken });
  }, 120_000);

  it("the host's key names its host", async () => {
    expect((await host.whoami()).scopes).toContain("sessions");
  });

  it("the sandbox reads its limits in both units", async () => {
    const limits = await sandbox.limits();
    expect(limits.token.symbol).toBe("USDC");
    expect(limits.remainingDeposit).toEqual({ amount: "50000000", display: "50.00 USDC" });
    expect(limits.perPaymentCap?.display).toBe("20.00 USDC");
    expect(limits.period?.remaining.display).toBe("30.00 USDC");
    expect(limits.counterparties.map((c) => c.address.toLowerCase())).toEqual([payee.toLowerCase()]);
    expect(limits.counterparties[0]!.label).toBe("reports");
  });

  it("pays once under a retried key, in token units", async () => {
    const before = await balance(payee);
    const first = await sandbox.pay({ to: payee, amount: "1.50 USDC", purpose: "a report" }, { idempotencyKey: "sdk-pay-1" });
    expect(first.status).toBe("confirmed");
    const again = await sandbox.pay({ to: payee, amount: 1_500_000n, purpose: "a report" }, { idempotencyKey: "sdk-pay-1" });
    expect(again.id).toBe(first.id);
    expect((await balance(payee)) - before).toBe(1_500_000n);
    expect((await sandbox.payment(first.id)).receiptId).toBeTruthy();
    expect((await sandbox.payments(5))[0]!.id).toBe(first.id);
  });

  it("refusals carry the rule's code and figures", async () => {
    const refused = async (p: Promise<unknown>) => {
      try {
        await p;
      } catch (e) {
        return e as BursarError;
      }
      throw new Error("not refused");
    };
    let e = await refused(sandbox.pay({ to: stranger, amount: "1", purpose: "x" }));
    expect([e.status, e.code]).toEqual([422, "WalletCounterpartyNotAllowed"]);
    expect(String(e.details.counterparty).toLowerCase()).toBe(stranger.toLowerCase());
    e = await refused(sandbox.pay({ to: payee, amount: "25 USDC", purpose: "x" }));
    expect(e.code).toBe("WalletPaymentCapExceeded");
    e = await refused(sandbox.pay({ to: payee, amount: "1.5 DAI", purpose: "x" }));
    expect(e).toBeInstanceOf(RangeError);
  });

  it("heart-beats and records provenance", async () => {
    expect((await sandbox.heartbeat(sessionId)).sessionId).toBe(sessionId);
    const record = await sandbox.recordProvenance({ artifact: "report.pdf", uri: "s3://reports/1" });
    expect(record.status).toBe("recorded");
    expect(record.recordId).toBeTruthy();
  });

  it("pays an x402 server built with x402's packages, within maxAmount", async () => {
    const url = env("X402_URL");
    const before = await balance(payee);
    await expect(sandbox.fetch(url, {}, { maxAmount: "0.001 USDC" })).rejects.toMatchObject({ code: "price_over_max" });
    expect(await balance(payee)).toBe(before);
    const answer = await sandbox.fetch(url, {}, { maxAmount: "0.05 USDC" });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ report: "all quiet" });
    expect((await balance(payee)) - before).toBe(BigInt(env("X402_PRICE")));
  });

  it("buys only from the agent meant, and sells only for an agent", async () => {
    const url = env("X402_URL");
    const before = await balance(payee);
    // No agent #999 holds the server's payTo: nothing paid.
    await expect(sandbox.fetch(url, {}, { agentId: "999" })).rejects.toMatchObject({ code: "invalid_request" });
    expect(await balance(payee)).toBe(before);
    await expect(sandbox.x402Offer({ amount: "1000", url: "https://sandbox.example/report" })).rejects.toMatchObject({
      status: 409,
      code: "session_has_no_agent",
    });
  });

  it("webhook deliveries verify, and a tampered one does not", async () => {
    const d = await delivery("payment.updated");
    const event = verifyWebhook(secret, d.body, d.headers);
    expect(event.type).toBe("payment.updated");
    expect(() => verifyWebhook(secret, d.body.replace("confirmed", "refunded") + " ", d.headers)).toThrow();
    const listed = await host.deliveries((await host.listWebhooks())[0]!.id);
    expect(listed.length).toBeGreaterThan(0);
  });

  it("lifecycle and policy", async () => {
    const policy = await host.getPolicy();
    expect(await host.setPolicy({ ...policy, onPaused: "record" })).toMatchObject({ onPaused: "record" });
    const received = await host.reportLifecycle(sessionId, { state: "running", eventId: `sdk-${sessionId}` });
    expect(received.sessions[0]!.sessionId).toBe(sessionId);
  });

  it("the indexer tells the session's story", async () => {
    const indexer = new IndexerClient({ baseUrl: env("BURSAR_INDEXER_URL") });
    let page = await indexer.timeline(sessionId, { limit: 100 });
    for (let i = 0; i < 300 && !page.events.some((e) => e.event === "PaymentExecuted"); i++) {
      await new Promise((r) => setTimeout(r, 100));
      page = await indexer.timeline(sessionId, { limit: 100 });
    }
    expect(page.events.map((e) => e.event)).toContain("PaymentExecuted");
    expect((await indexer.session(sessionId)).status).toBe("active");
  });

  it("revoked, the token stops working; closed, the owner is refunded", async () => {
    const revoked = await host.revokeSession(sessionId);
    expect(revoked.capabilityRevoked).toBe(true);
    await expect(sandbox.limits()).rejects.toMatchObject({ status: 401, code: "unauthorized" });
    const session = await host.getSession(sessionId);
    expect(session.capabilityRevoked).toBe(true);
    const closing = await host.closeSession(sessionId);
    expect(["closed", "closing"]).toContain(closing.status);
    receiver.close();
  });
});
