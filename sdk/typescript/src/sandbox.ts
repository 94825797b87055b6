import type { components, paths } from "./generated/relayer.js";
import { BursarError, unwrap } from "./errors.js";
import { client, type ClientOptions } from "./http.js";
import { parseAmount } from "./money.js";

type S = components["schemas"];

/** What to pay. */
export interface PayRequest {
  /** The payee: one of the counterparties `limits()` lists. */
  to: string;
  /** Base units (`1500000n`, `"1500000"`) or the token's units (`"1.50 USDC"`). */
  amount: bigint | string;
  /** What it is for (its keccak-256 goes on chain), or 0x and 64 hex digits. */
  purpose: string;
}

/** Options of `fetch`. */
export interface FetchOptions {
  /** The most a 402 may cost: base units, or the token's units (`"0.05 USDC"`). */
  maxAmount?: bigint | string;
  /**
   * The ERC-8004 agent (decimal id) this is bought from: only an option paying its
   * `agentWallet` is paid; a 402 asking to pay anyone else is refused, nothing paid.
   */
  agentId?: string;
}

/** What a sandbox does over the relayer's API, with its session's capability token (`bct_…`). */
export class SandboxClient {
  readonly #http;
  readonly #fetch: typeof globalThis.fetch;

  constructor(options: ClientOptions & { capabilityToken: string }) {
    this.#http = client<paths>(options, options.capabilityToken);
    this.#fetch = options.fetch ?? globalThis.fetch;
  }

  /** What the session may still spend and whom it may pay, now. */
  limits(): Promise<S["Limits"]> {
    return unwrap(this.#http.GET("/v1/limits"));
  }

  /**
   * Pays from the session, then waits up to `wait` seconds (default 30) for it to settle:
   * `confirmed`, or `pending_approval` above the co-sign threshold. A refusal by the session's
   * rules throws a {@link BursarError} whose `code` names the rule.
   */
  async pay(request: PayRequest, options: { wait?: number; idempotencyKey?: string } = {}): Promise<S["Payment"]> {
    const amount = await this.#baseUnits(request.amount);
    const headers = options.idempotencyKey ? { "Idempotency-Key": options.idempotencyKey } : {};
    const queued = await unwrap(
      this.#http.POST("/v1/payments", {
        body: { to: request.to, amount: amount.toString(), purpose: request.purpose },
        headers,
      }),
    );
    const wait = options.wait ?? 30;
    return wait > 0 ? this.payment(queued.id, wait) : queued;
  }

  /** A payment of the session's, waiting up to `wait` seconds for it to settle. */
  payment(id: string, wait?: number): Promise<S["Payment"]> {
    return unwrap(this.#http.GET("/v1/payments/{id}", { params: { path: { id }, query: { wait } } }));
  }

  /** The session's payments, newest first. */
  async payments(limit?: number): Promise<S["Payment"][]> {
    return (await unwrap(this.#http.GET("/v1/payments", { params: { query: { limit } } }))).payments;
  }

  /** The sandbox is alive: the relayer renews the lease once half of it is gone. */
  heartbeat(sessionId: string): Promise<S["Heartbeat"]> {
    return unwrap(this.#http.POST("/v1/sessions/{id}/heartbeat", { params: { path: { id: sessionId } } }));
  }

  /** Records provenance, then waits up to `wait` seconds (default 30) for it to be recorded. */
  async recordProvenance(record: S["RecordRequest"], wait = 30): Promise<S["Provenance"]> {
    const queued = await unwrap(this.#http.POST("/v1/provenance", { body: record }));
    return wait > 0 ? this.provenance(queued.id, wait) : queued;
  }

  /** A provenance record of the session's. */
  provenance(id: string, wait?: number): Promise<S["Provenance"]> {
    return unwrap(this.#http.GET("/v1/provenance/{id}", { params: { path: { id }, query: { wait } } }));
  }

  /**
   * Rates the ERC-8004 agent an executed payment of the session's went to (feedback backed by
   * that payment's receipt), then waits up to `wait` seconds (default 30) for it to be given.
   */
  async rate(rating: S["RateRequest"], wait = 30): Promise<S["Feedback"]> {
    const queued = await unwrap(this.#http.POST("/v1/feedback", { body: rating }));
    return wait > 0 ? this.feedback(queued.id, wait) : queued;
  }

  /** A feedback of the session's. */
  feedback(id: string, wait?: number): Promise<S["Feedback"]> {
    return unwrap(this.#http.GET("/v1/feedback/{id}", { params: { path: { id }, query: { wait } } }));
  }

  /**
   * The `PAYMENT-SIGNATURE` that pays a 402's `PAYMENT-REQUIRED` (x402 v2) from the session;
   * with `agentId`, only to that ERC-8004 agent's `agentWallet`.
   */
  x402Pay(paymentRequired: string | object, agentId?: string): Promise<S["X402Paid"]> {
    return unwrap(
      this.#http.POST("/v1/x402/pay", { body: { paymentRequired: paymentRequired as object, agentId } }),
    );
  }

  /**
   * What the session's ERC-8004 agent sells: the `PAYMENT-REQUIRED` of a 402 paid at the
   * agent's `agentWallet`, to answer requests for `url` with; verify and settle each payment
   * at the relayer's `/x402/verify` and `/x402/settle`.
   */
  x402Offer(offer: S["OfferRequest"]): Promise<S["Offer"]> {
    return unwrap(this.#http.POST("/v1/x402/offer", { body: offer }));
  }

  /**
   * `fetch`, paying a `402 Payment Required` (x402 v2) from the session — at most `maxAmount`
   * — and retrying once with the payment. The answer is the resource's.
   */
  async fetch(input: string | URL, init: RequestInit = {}, options: FetchOptions = {}): Promise<Response> {
    const first = await this.#fetch(input, init);
    const required = first.headers.get("payment-required");
    if (first.status !== 402 || !required) return first;
    let offer = JSON.parse(Buffer.from(required, "base64").toString("utf8")) as {
      accepts?: { amount?: string }[];
    };
    if (options.maxAmount !== undefined) {
      const max = await this.#baseUnits(options.maxAmount);
      const asked = (offer.accepts ?? []).map((a) => a.amount);
      const accepts = (offer.accepts ?? []).filter((a) => a.amount !== undefined && BigInt(a.amount) <= max);
      if (accepts.length === 0) {
        throw new BursarError(402, "price_over_max", `the resource asks ${asked.join(" or ")} base units, more than ${max}`, {
          asked,
          max: max.toString(),
        });
      }
      offer = { ...offer, accepts };
    }
    const { paymentSignature } = await this.x402Pay(offer, options.agentId);
    const headers = new Headers(init.headers);
    headers.set("PAYMENT-SIGNATURE", paymentSignature);
    return this.#fetch(input, { ...init, headers });
  }

  async #baseUnits(amount: bigint | string): Promise<bigint> {
    if (typeof amount === "bigint") return amount;
    if (/^\d+$/.test(amount.trim())) return BigInt(amount.trim());
    return parseAmount(amount, (await this.limits()).token);
  }
}
