import createClient from "openapi-fetch";

/** How a client reaches a service. */
export interface ClientOptions {
  /** The service's base URL (`http://127.0.0.1:8549`). */
  baseUrl: string;
  /** Attempts after the first for an answer that may be retried (default 3). */
  retries?: number;
  /** The `fetch` to use (default the global one). */
  fetch?: typeof globalThis.fetch;
}

const RETRIED = new Set([429, 502, 503, 504]);

/**
 * A `fetch` that retries what may be retried — a network error, 429 (after its
 * `Retry-After`), 502, 503, 504 — and gives every POST, PUT and DELETE an `Idempotency-Key`
 * once, so that its retries are the same request: the relayer answers a repeated key with the
 * first answer (`Idempotent-Replayed: true`) and never does the work twice.
 */
export function retrying(base: typeof globalThis.fetch, retries: number): (req: Request) => Promise<Response> {
  return async (request: Request) => {
    if (request.method !== "GET" && !request.headers.has("Idempotency-Key")) {
      request.headers.set("Idempotency-Key", crypto.randomUUID());
    }
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= retries;
      try {
        const response = await base(request.clone());
        if (last || !RETRIED.has(response.status)) return response;
        await pause(response.headers.get("Retry-After"), attempt);
      } catch (e) {
        if (last) throw e;
        await pause(null, attempt);
      }
    }
  };
}

async function pause(retryAfter: string | null, attempt: number): Promise<void> {
  const seconds = Number(retryAfter);
  const ms = Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 200 * 2 ** attempt;
  await new Promise((resolve) => setTimeout(resolve, Math.min(ms, 10_000)));
}

/** An openapi-fetch client of `paths`, with `bearer` (if any) on every request. */
export function client<Paths extends {}>(options: ClientOptions, bearer?: string) {
  const http = createClient<Paths>({
    baseUrl: options.baseUrl.replace(/\/$/, ""),
    fetch: retrying(options.fetch ?? globalThis.fetch, options.retries ?? 3),
  });
  if (bearer) {
    http.use({
      onRequest({ request }) {
        request.headers.set("Authorization", `Bearer ${bearer}`);
        return request;
      },
    });
  }
  return http;
}
