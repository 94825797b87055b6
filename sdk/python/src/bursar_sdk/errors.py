"""What the services answer when they refuse: ``{code, message, details}``, ``code`` stable."""

from __future__ import annotations

from typing import Any


class BursarError(Exception):
    """A refusal: a contract error's name (``WalletPeriodBudgetExceeded``, with ``amount`` and
    ``available`` in ``details``) or the service's own code (``unauthorized``, ``not_found``,
    ``invalid_request``, ``idempotency_key_reused``, ``rate_limited``, ``unavailable``…)."""

    def __init__(self, status: int, code: str, message: str, details: dict[str, Any] | None = None):
        super().__init__(f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details or {}

    @classmethod
    def from_answer(cls, status: int, body: Any) -> "BursarError":
        b = body if isinstance(body, dict) else {}
        code = b.get("code") if isinstance(b.get("code"), str) else f"http_{status}"
        message = b.get("message") if isinstance(b.get("message"), str) else "the service refused"
        details = b.get("details") if isinstance(b.get("details"), dict) else {}
        return cls(status, code, message, details)
