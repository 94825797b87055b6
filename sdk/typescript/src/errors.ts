/**
 * What the relayer and the indexer answer when they refuse: `{code, message, details}` with a
 * stable `code` — a contract error's name (`WalletPeriodBudgetExceeded`, with `amount` and
 * `available` in `details`) or the service's own (`unauthorized`, `not_found`,
 * `invalid_request`, `idempotency_key_reused`, `rate_limited`, `unavailable`…).
 */
export class BursarError extends Error {
  /** The HTTP status (0 when the service could not be reached). */
  readonly status: number;
  /** The stable code. */
  readonly code: string;
  /** The error's arguments by name. */
  readonly details: Record<string, unknown>;

  constructor(status: number, code: string, message: string, details: Record<string, unknown> = {}) {
    super(`${code}: ${message}`);
    this.name = "BursarError";
    this.status = status;
    this.code = code;
    this.details = details;
  }

  /** From an answer's status and its (parsed) error body. */
  static from(status: number, body: unknown): BursarError {
    const b = (body ?? {}) as { code?: unknown; message?: unknown; details?: unknown };
    const code = typeof b.code === "string" ? b.code : `http_${status}`;
    const message = typeof b.message === "string" ? b.message : "the service refused";
    const details = (b.details && typeof b.details === "object" ? b.details : {}) as Record<string, unknown>;
    return new BursarError(status, code, message, details);
  }
}

/** The data of an openapi-fetch answer, or its error thrown as a {@link BursarError}. */
export async function unwrap<T>(
  answer: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  const { data, error, response } = await answer;
  if (error !== undefined || !response.ok) {
    throw BursarError.from(response.status, error);
  }
  return data as T;
}
