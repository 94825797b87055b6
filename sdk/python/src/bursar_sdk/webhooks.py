"""A delivery of the relayer's verified: Standard Webhooks (``webhook-id``,
``webhook-timestamp``, ``webhook-signature``; HMAC-SHA256 with the endpoint's ``whsec_…``
secret), checked by the ``standardwebhooks`` package on the raw body."""

from __future__ import annotations

from typing import Any, Mapping

from standardwebhooks.webhooks import Webhook


def verify_webhook(secret: str, raw_body: str | bytes, headers: Mapping[str, str]) -> dict[str, Any]:
    """The delivery's event (``type``, ``timestamp``, ``data``); raises when the signature or the
    timestamp does not hold."""
    body = raw_body.decode() if isinstance(raw_body, bytes) else raw_body
    return Webhook(secret).verify(body, {k.lower(): v for k, v in headers.items()})
