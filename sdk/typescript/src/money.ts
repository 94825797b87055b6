/** A token as the relayer describes it (`GET /v1/limits`' `token`). */
export interface Token {
  symbol: string;
  decimals: number;
}

/**
 * An amount written `"1.50 USDC"` or `"1.50"` (the token's units) or `"1500000"` (digits
 * alone: base units), in base units.
 */
export function parseAmount(text: string, token: Token): bigint {
  const t = text.trim();
  const [number, unit, ...rest] = t.split(/\s+/);
  if (rest.length > 0 || number === undefined) throw new RangeError(`${JSON.stringify(text)} is not an amount`);
  if (unit !== undefined && unit.toUpperCase() !== token.symbol.toUpperCase()) {
    throw new RangeError(`${JSON.stringify(text)}: the session pays in ${token.symbol}, not ${unit}`);
  }
  if (unit === undefined && /^\d+$/.test(number)) return BigInt(number);
  const m = /^(\d*)(?:\.(\d*))?$/.exec(number);
  if (!m || (m[1] === "" && (m[2] ?? "") === "")) {
    throw new RangeError(`${JSON.stringify(text)} is not an amount such as "1.50 ${token.symbol}"`);
  }
  const fraction = m[2] ?? "";
  if (fraction.length > token.decimals) {
    throw new RangeError(`${JSON.stringify(text)}: ${token.symbol} has ${token.decimals} decimals`);
  }
  return BigInt((m[1] || "0") + fraction.padEnd(token.decimals, "0"));
}

/** `amount` base units as people read them: `1.50 USDC`. */
export function formatAmount(amount: bigint, token: Token): string {
  const unit = 10n ** BigInt(token.decimals);
  const whole = amount / unit;
  if (token.decimals === 0) return `${whole} ${token.symbol}`;
  const digits = (amount % unit).toString().padStart(token.decimals, "0");
  const trimmed = digits.replace(/0+$/, "");
  return `${whole}.${trimmed.length < 2 ? digits.slice(0, 2) : trimmed} ${token.symbol}`;
}
