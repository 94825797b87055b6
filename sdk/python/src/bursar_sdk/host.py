"""What a host does over the relayer's API, with its API key (``bhk_…``)."""

from __future__ import annotations

from typing import Any

import httpx

from ._api import Api
from ._http import AsyncTransport, Transport
from .models import relayer as m


class _Host(Api):
    def whoami(self) -> m.HostView:
        """The key's host and scopes."""
        return self._get("/v1/host", m.HostView)

    def prepare_session(self, terms: m.PrepareRequest | dict[str, Any]) -> m.Prepared:
        """A custodial key, and the typed data the owner signs (see ``signing.sign_prepared``)."""
        return self._send("POST", "/v1/sessions/prepare", m.Prepared, terms)

    def open_session(self, signed: m.OpenRequest | dict[str, Any]) -> m.Opened:
        """Opens a prepared session with the owner's signatures; the answer carries the
        sandbox's capability token, once."""
        return self._send("POST", "/v1/sessions", m.Opened, signed)

    def register_session(self, prepared_id: str) -> m.Opened:
        """Registers a prepared session the owner opened with their own wallet."""
        return self._send("POST", "/v1/sessions/register", m.Opened, {"preparedId": prepared_id})

    def prepare_agent(self, agent: m.PrepareAgentRequest | dict[str, Any]) -> m.Agent:
        """An ERC-8004 agent for an owner: its registration file and the ``RegisterAgent`` typed
        data the owner signs."""
        return self._send("POST", "/v1/agents/prepare", m.Agent, agent)

    def register_agent(self, agent_ref: str, owner_signature: str) -> m.Agent:
        """Registers a prepared agent with the owner's signature; the relayer pays the gas and
        hands the agent to the owner."""
        body = {"agentRef": agent_ref, "ownerSignature": owner_signature}
        return self._send("POST", "/v1/agents", m.Agent, body)

    def get_agent(self, agent_ref: str) -> m.Agent:
        """An agent the host prepared: ``registered`` once the owner holds it."""
        return self._get(f"/v1/agents/{agent_ref}", m.Agent)

    def list_sessions(self, **query: Any) -> list[m.Session]:
        """The host's sessions, newest first (``provider``, ``sandboxId``, ``before``, ``limit``)."""
        return self._get("/v1/sessions", m.Session, "sessions", **query)

    def get_session(self, session_id: str) -> m.Session:
        """A session with its on-chain state, lifecycle and metering."""
        return self._get(f"/v1/sessions/{session_id}", m.Session)

    def revoke_session(self, session_id: str) -> m.Revoked:
        """Its capability token at once; on chain when the relayer is guardian."""
        return self._send("POST", f"/v1/sessions/{session_id}/revoke", m.Revoked)

    def close_session(self, session_id: str) -> m.Closing:
        """Closes it on chain, refunding the owner."""
        return self._send("POST", f"/v1/sessions/{session_id}/close", m.Closing)

    def report_lifecycle(self, session_id: str, report: m.LifecycleRequest | dict[str, Any]) -> m.LifecycleReceived:
        """The sandbox's state, for providers without a lifecycle bridge."""
        return self._send("POST", f"/v1/sessions/{session_id}/lifecycle", m.LifecycleReceived, report)

    def get_policy(self) -> m.Policy:
        """The host's lifecycle policy and metering rates."""
        return self._get("/v1/host/policy", m.Policy)

    def set_policy(self, policy: m.Policy | dict[str, Any]) -> m.Policy:
        """Sets it, for events received from now on."""
        return self._send("PUT", "/v1/host/policy", m.Policy, policy)

    def get_payment(self, payment_id: str, wait: int | None = None) -> m.Payment:
        """A payment of one of the host's sessions."""
        return self._get(f"/v1/payments/{payment_id}", m.Payment, wait=wait)

    def decision_to_sign(self, session_id: str, pending_id: str, approve: bool) -> m.DecisionToSign:
        """The typed data the owner signs to decide a pending payment."""
        path = f"/v1/sessions/{session_id}/pending/{pending_id}/decision"
        return self._get(path, m.DecisionToSign, approve=str(approve).lower())

    def decide(self, session_id: str, pending_id: str, decision: m.DecisionRequest | dict[str, Any]) -> m.Decided:
        """Sends the owner's signed decision through the gateway."""
        path = f"/v1/sessions/{session_id}/pending/{pending_id}/decision"
        return self._send("POST", path, m.Decided, decision)

    def create_webhook(self, url: str, events: list[str] | None = None) -> m.Webhook:
        """Adds an endpoint; its ``secret`` (``whsec_…``) is in this answer only."""
        return self._send("POST", "/v1/webhooks", m.Webhook, {"url": url, **({"events": events} if events else {})})

    def list_webhooks(self) -> list[m.Webhook]:
        """The host's endpoints."""
        return self._get("/v1/webhooks", m.Webhook, "webhooks")

    def delete_webhook(self, webhook_id: str) -> None:
        """Deletes an endpoint."""
        return self._send("DELETE", f"/v1/webhooks/{webhook_id}", None)

    def deliveries(self, webhook_id: str, status: str | None = None) -> list[m.Delivery]:
        """An endpoint's deliveries, newest first."""
        return self._get(f"/v1/webhooks/{webhook_id}/deliveries", m.Delivery, "deliveries", status=status)

    def replay(self, webhook_id: str, message_id: str) -> None:
        """Delivers a message again."""
        return self._send("POST", f"/v1/webhooks/{webhook_id}/deliveries/{message_id}/replay", None)


class HostClient(_Host):
    """A host's client (synchronous)."""

    def __init__(self, base_url: str, api_key: str, *, retries: int = 3, client: httpx.Client | None = None):
        super().__init__(Transport(base_url, api_key, retries, client))

    def close(self) -> None:
        self._t.close()


class AsyncHostClient(_Host):
    """A host's client (asyncio): the same methods, awaited."""

    def __init__(self, base_url: str, api_key: str, *, retries: int = 3, client: httpx.AsyncClient | None = None):
        super().__init__(AsyncTransport(base_url, api_key, retries, client))

    async def aclose(self) -> None:
        await self._t.aclose()
