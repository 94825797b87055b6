import { describe, expect, it } from "vitest";
import { retrying } from "../src/http.js";
import { BursarError, formatAmount, parseAmount } from "../src/index.js";

const usdc = { symbol: "USDC", decimals: 6 };

describe("amounts", () => {
  it("read as people write them, in base units", () => {
    expect(parseAmount("1.50 USDC", usdc)).toBe(1_500_000n);
    expect(parseAmount("1.5 usdc", usdc)).toBe(1_500_000n);
    expect(parseAmount("1.50", usdc)).toBe(1_500_000n);
    expect(parseAmount("1500000", usdc)).toBe(1_500_000n);
    expect(parseAmount(".25", usdc)).toBe(250_000n);
    for (const bad of ["1.5 DAI", "0.0000001", "-1", "1e6", "1.2.3", ".", "", "one USDC", "0x10", "1,50", "1 USDC extra"]) {
      expect(() => parseAmount(bad, usdc), bad).toThrow(RangeError);
    }
  });

  it("shown as people read them, and read back", () => {
    expect(formatAmount(1_500_000n, usdc)).toBe("1.50 USDC");
    expect(formatAmount(1n, usdc)).toBe("0.000001 USDC");
    expect(formatAmount(12_000_000n, usdc)).toBe("12.00 USDC");
    for (const n of [0n, 1n, 10n, 999_999n, 1_000_000n, 123_456_789n]) {
      expect(parseAmount(formatAmount(n, usdc), usdc)).toBe(n);
    }
  });
});

describe("retries", () => {
  it("send a POST again under the same Idempotency-Key until it is answered", async () => {
    const keys: (string | null)[] = [];
    let calls = 0;
    const flaky = async (req: RequestInfo | URL) => {
      const r = req as Request;
      keys.push(r.headers.get("Idempotency-Key"));
      calls += 1;
      if (calls === 1) throw new TypeError("connection reset");
      if (calls === 2) return new Response("{}", { status: 503 });
      return new Response(JSON.stringify({ body: await r.text() }), { status: 202 });
    };
    const fetch = retrying(flaky as typeof globalThis.fetch, 3);
    const answer = await fetch(new Request("http://relayer.test/v1/payments", { method: "POST", body: "{\"a\":1}" }));
    expect(answer.status).toBe(202);
    expect(await answer.json()).toEqual({ body: "{\"a\":1}" });
    expect(calls).toBe(3);
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("give up after the last attempt, and never retry a refusal", async () => {
    let calls = 0;
    const refusing = async () => {
      calls += 1;
      return new Response("{}", { status: 422 });
    };
    const fetch = retrying(refusing as typeof globalThis.fetch, 3);
    expect((await fetch(new Request("http://relayer.test/x", { method: "POST" }))).status).toBe(422);
    expect(calls).toBe(1);
  });

  it("errors carry the stable code and details", () => {
    const e = BursarError.from(422, { code: "WalletPaymentCapExceeded", message: "over the cap", details: { cap: "1" } });
    expect(e.code).toBe("WalletPaymentCapExceeded");
    expect(e.details).toEqual({ cap: "1" });
    expect(e.status).toBe(422);
    expect(BursarError.from(502, "<html>").code).toBe("http_502");
  });
});
