"""Amounts as people write and read them: ``1.50 USDC`` in a token of 6 decimals is 1,500,000
base units (what the contracts and the API take, as decimal strings)."""

from __future__ import annotations

import re


def parse_amount(text: str, symbol: str, decimals: int) -> int:
    """``"1.50 USDC"`` or ``"1.50"`` (token units) or ``"1500000"`` (digits alone: base units)."""
    parts = text.split()
    if not parts or len(parts) > 2:
        raise ValueError(f"{text!r} is not an amount")
    number, unit = parts[0], parts[1] if len(parts) == 2 else None
    if unit is not None and unit.upper() != symbol.upper():
        raise ValueError(f"{text!r}: the session pays in {symbol}, not {unit}")
    if unit is None and re.fullmatch(r"\d+", number):
        return int(number)
    m = re.fullmatch(r"(\d*)(?:\.(\d*))?", number)
    if not m or (m.group(1) == "" and not m.group(2)):
        raise ValueError(f'{text!r} is not an amount such as "1.50 {symbol}"')
    fraction = m.group(2) or ""
    if len(fraction) > decimals:
        raise ValueError(f"{text!r}: {symbol} has {decimals} decimals")
    return int((m.group(1) or "0") + fraction.ljust(decimals, "0"))


def format_amount(amount: int, symbol: str, decimals: int) -> str:
    """``amount`` base units as people read them: ``1.50 USDC``."""
    whole, fraction = divmod(amount, 10**decimals)
    if decimals == 0:
        return f"{whole} {symbol}"
    digits = str(fraction).rjust(decimals, "0")
    trimmed = digits.rstrip("0")
    return f"{whole}.{trimmed if len(trimmed) >= 2 else digits[:2]} {symbol}"
