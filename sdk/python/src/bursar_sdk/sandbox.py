"""What a sandbox does over the relayer's API, with its session's capability token (``bct_…``)."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import httpx

from ._api import Api
from ._http import AsyncTransport, Transport
from .errors import BursarError
from .models import relayer as m
from .money import parse_amount


def _base_units(amount: int | str, limits: m.Limits | None) -> int:
    if isinstance(amount, int):
        return amount
    if re.fullmatch(r"\d+", amount.strip()):
        return int(amount.strip())
    assert limits is not None
    return parse_amount(amount, limits.token.symbol, limits.token.decimals)


def _needs_limits(*amounts: int | str | None) -> bool:
    return any(isinstance(a, str) and not re.fullmatch(r"\d+", a.strip()) for a in amounts)


def _within(required: str, max_units: int | None) -> dict[str, Any]:
    """The 402's offer (base64 JSON), keeping only the options within ``max_units``."""
    offer = json.loads(base64.b64decode(required))
    if max_units is None:
        return offer
    asked = [a.get("amount") for a in offer.get("accepts", [])]
    kept = [a for a in offer.get("accepts", []) if a.get("amount", "").isdigit() and int(a["amount"]) <= max_units]
    if not kept:
        raise BursarError(402, "price_over_max", f"the resource asks {' or '.join(map(str, asked))} base units, "
                          f"more than {max_units}", {"asked": asked, "max": str(max_units)})
    return {**offer, "accepts": kept}


class _Sandbox(Api):
    def limits(self) -> m.Limits:
        """What the session may still spend and whom it may pay, now."""
        return self._get("/v1/limits", m.Limits)

    def payment(self, payment_id: str, wait: int | None = None) -> m.Payment:
        """A payment of the session's, waiting up to ``wait`` seconds for it to settle."""
        return self._get(f"/v1/payments/{payment_id}", m.Payment, wait=wait)

    def payments(self, limit: int | None = None) -> list[m.Payment]:
        """The session's payments, newest first."""
        return self._get("/v1/payments", m.Payment, "payments", limit=limit)

    def heartbeat(self, session_id: str) -> m.Heartbeat:
        """The sandbox is alive: the relayer renews the lease once half of it is gone."""
        return self._send("POST", f"/v1/sessions/{session_id}/heartbeat", m.Heartbeat)

    def provenance(self, record_id: str, wait: int | None = None) -> m.Provenance:
        """A provenance record of the session's."""
        return self._get(f"/v1/provenance/{record_id}", m.Provenance, wait=wait)

    def feedback(self, feedback_id: str, wait: int | None = None) -> m.Feedback:
        """A feedback of the session's."""
        return self._get(f"/v1/feedback/{feedback_id}", m.Feedback, wait=wait)

    def x402_pay(self, payment_required: str | dict[str, Any], agent_id: str | None = None) -> m.X402Paid:
        """The ``PAYMENT-SIGNATURE`` that pays a 402's ``PAYMENT-REQUIRED`` (x402 v2); with
        ``agent_id``, only to that ERC-8004 agent's ``agentWallet``."""
        body = {"paymentRequired": payment_required, "agentId": agent_id}
        return self._send("POST", "/v1/x402/pay", m.X402Paid, body)

    def x402_offer(self, offer: m.OfferRequest | dict[str, Any]) -> m.Offer:
        """What the session's ERC-8004 agent sells: the ``PAYMENT-REQUIRED`` of a 402 paid at the
        agent's ``agentWallet``; verify and settle payments at the relayer's ``/x402/*``."""
        return self._send("POST", "/v1/x402/offer", m.Offer, offer)


class SandboxClient(_Sandbox):
    """A sandbox's client (synchronous)."""

    def __init__(self, base_url: str, capability_token: str, *, retries: int = 3, client: httpx.Client | None = None):
        super().__init__(Transport(base_url, capability_token, retries, client))

    def pay(self, to: str, amount: int | str, purpose: str, *, wait: int = 30,
            idempotency_key: str | None = None) -> m.Payment:
        """Pays (``amount`` in base units, or ``"1.50 USDC"``), then waits up to ``wait`` seconds
        for it to settle. A refusal by the session's rules raises ``BursarError`` naming the rule."""
        limits = self.limits() if _needs_limits(amount) else None
        body = {"to": to, "amount": str(_base_units(amount, limits)), "purpose": purpose}
        queued = self._send("POST", "/v1/payments", m.Payment, body, key=idempotency_key)
        return self.payment(queued.id, wait) if wait > 0 else queued

    def record_provenance(self, record: m.RecordRequest | dict[str, Any], *, wait: int = 30) -> m.Provenance:
        """Records provenance, then waits up to ``wait`` seconds for it to be recorded."""
        queued = self._send("POST", "/v1/provenance", m.Provenance, record)
        return self.provenance(queued.id, wait) if wait > 0 else queued

    def rate(self, rating: m.RateRequest | dict[str, Any], *, wait: int = 30) -> m.Feedback:
        """Rates the ERC-8004 agent an executed payment of the session's went to (feedback backed
        by that payment's receipt), then waits up to ``wait`` seconds for it to be given."""
        queued = self._send("POST", "/v1/feedback", m.Feedback, rating)
        return self.feedback(queued.id, wait) if wait > 0 else queued

    def fetch(self, method: str, url: str, *, max_amount: int | str | None = None,
              agent_id: str | None = None, **kwargs: Any) -> httpx.Response:
        """An HTTP request that pays a ``402 Payment Required`` (x402) from the session, at most
        ``max_amount`` (and, with ``agent_id``, only to that ERC-8004 agent's wallet), and retries
        once with the payment."""
        with httpx.Client(timeout=60) as web:
            first = web.request(method, url, **kwargs)
            required = first.headers.get("payment-required")
            if first.status_code != 402 or not required:
                return first
            limits = self.limits() if _needs_limits(max_amount) else None
            most = None if max_amount is None else _base_units(max_amount, limits)
            paid = self.x402_pay(_within(required, most), agent_id)
            headers = {**kwargs.pop("headers", {}), "PAYMENT-SIGNATURE": paid.payment_signature}
            return web.request(method, url, headers=headers, **kwargs)

    def close(self) -> None:
        self._t.close()


class AsyncSandboxClient(_Sandbox):
    """A sandbox's client (asyncio): the same methods, awaited."""

    def __init__(self, base_url: str, capability_token: str, *, retries: int = 3,
                 client: httpx.AsyncClient | None = None):
        super().__init__(AsyncTransport(base_url, capability_token, retries, client))

    async def pay(self, to: str, amount: int | str, purpose: str, *, wait: int = 30,
                  idempotency_key: str | None = None) -> m.Payment:
        """As ``SandboxClient.pay``."""
        limits = await self.limits() if _needs_limits(amount) else None
        body = {"to": to, "amount": str(_base_units(amount, limits)), "purpose": purpose}
        queued = await self._send("POST", "/v1/payments", m.Payment, body, key=idempotency_key)
        return await self.payment(queued.id, wait) if wait > 0 else queued

    async def record_provenance(self, record: m.RecordRequest | dict[str, Any], *, wait: int = 30) -> m.Provenance:
        """As ``SandboxClient.record_provenance``."""
        queued = await self._send("POST", "/v1/provenance", m.Provenance, record)
        return await self.provenance(queued.id, wait) if wait > 0 else queued

    async def rate(self, rating: m.RateRequest | dict[str, Any], *, wait: int = 30) -> m.Feedback:
        """As ``SandboxClient.rate``."""
        queued = await self._send("POST", "/v1/feedback", m.Feedback, rating)
        return await self.feedback(queued.id, wait) if wait > 0 else queued

    async def fetch(self, method: str, url: str, *, max_amount: int | str | None = None,
                    agent_id: str | None = None, **kwargs: Any) -> httpx.Response:
        """As ``SandboxClient.fetch``."""
        async with httpx.AsyncClient(timeout=60) as web:
            first = await web.request(method, url, **kwargs)
            required = first.headers.get("payment-required")
            if first.status_code != 402 or not required:
                return first
            limits = await self.limits() if _needs_limits(max_amount) else None
            most = None if max_amount is None else _base_units(max_amount, limits)
            paid = await self.x402_pay(_within(required, most), agent_id)
            headers = {**kwargs.pop("headers", {}), "PAYMENT-SIGNATURE": paid.payment_signature}
            return await web.request(method, url, headers=headers, **kwargs)

    async def aclose(self) -> None:
        await self._t.aclose()
