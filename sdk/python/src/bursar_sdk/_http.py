"""How the clients reach a service: a bearer on every request, an ``Idempotency-Key`` on every
POST, PUT and DELETE (yours, or one made per call), and retries of what may be retried — a
network error, 429 (after ``Retry-After``), 502, 503, 504 — under that same key, so that the
relayer, which answers a repeated key with its first answer, never does the work twice."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import httpx

from .errors import BursarError

RETRIED = {429, 502, 503, 504}


def _pause(answer: httpx.Response | None, attempt: int) -> float:
    try:
        seconds = float(answer.headers.get("Retry-After", "")) if answer is not None else 0.0
    except ValueError:
        seconds = 0.0
    return min(seconds if seconds > 0 else 0.2 * 2**attempt, 10.0)


def _headers(method: str, bearer: str | None, key: str | None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    if method != "GET":
        headers["Idempotency-Key"] = key or str(uuid.uuid4())
    return headers


def _answer(response: httpx.Response) -> Any:
    body: Any = None
    if response.content:
        try:
            body = response.json()
        except ValueError:
            body = response.text
    if response.is_error:
        raise BursarError.from_answer(response.status_code, body)
    return body


class Transport:
    """Synchronous requests (httpx.Client)."""

    def __init__(self, base_url: str, bearer: str | None, retries: int, client: httpx.Client | None):
        self._http = client or httpx.Client(base_url=base_url.rstrip("/"), timeout=90)
        self._bearer = bearer
        self._retries = retries

    def call(self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None,
             key: str | None = None) -> Any:
        headers = _headers(method, self._bearer, key)
        params = {k: v for k, v in (params or {}).items() if v is not None}
        for attempt in range(self._retries + 1):
            last = attempt == self._retries
            try:
                response = self._http.request(method, path, json=json, params=params, headers=headers)
            except httpx.TransportError:
                if last:
                    raise
                time.sleep(_pause(None, attempt))
                continue
            if last or response.status_code not in RETRIED:
                return _answer(response)
            time.sleep(_pause(response, attempt))

    def close(self) -> None:
        self._http.close()


class AsyncTransport:
    """Asynchronous requests (httpx.AsyncClient)."""

    def __init__(self, base_url: str, bearer: str | None, retries: int, client: httpx.AsyncClient | None):
        self._http = client or httpx.AsyncClient(base_url=base_url.rstrip("/"), timeout=90)
        self._bearer = bearer
        self._retries = retries

    async def call(self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None,
                   key: str | None = None) -> Any:
        headers = _headers(method, self._bearer, key)
        params = {k: v for k, v in (params or {}).items() if v is not None}
        for attempt in range(self._retries + 1):
            last = attempt == self._retries
            try:
                response = await self._http.request(method, path, json=json, params=params, headers=headers)
            except httpx.TransportError:
                if last:
                    raise
                await asyncio.sleep(_pause(None, attempt))
                continue
            if last or response.status_code not in RETRIED:
                return _answer(response)
            await asyncio.sleep(_pause(response, attempt))

    async def aclose(self) -> None:
        await self._http.aclose()
