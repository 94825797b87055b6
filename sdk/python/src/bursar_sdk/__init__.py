"""Bursar for hosts and sandboxes.

A host prepares sessions, has the owner sign them in their own wallet, opens, watches, revokes
and closes them (``HostClient``, ``AsyncHostClient``); a sandbox pays, reads its limits,
heart-beats, records provenance and pays x402 APIs with its capability token
(``SandboxClient``, ``AsyncSandboxClient``). Models are generated from the services' OpenAPI
documents (``bursar_sdk.models``); errors are ``BursarError`` with the stable ``code``.
"""

from .errors import BursarError
from .host import AsyncHostClient, HostClient
from .money import format_amount, parse_amount
from .sandbox import AsyncSandboxClient, SandboxClient
from .webhooks import verify_webhook

__all__ = [
    "AsyncHostClient",
    "AsyncSandboxClient",
    "BursarError",
    "HostClient",
    "SandboxClient",
    "format_amount",
    "parse_amount",
    "verify_webhook",
]
