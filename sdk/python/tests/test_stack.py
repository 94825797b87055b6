"""The SDK against a running ``bursar up``: a host prepares, the owner signs with eth-account,
the session opens; the sandbox reads its limits, pays once under a retried key, is refused by
the rules with their codes, heart-beats, records provenance and pays an x402 server built with
x402's own packages; webhook deliveries verify with standardwebhooks; the async clients do the
same; revoked, the token stops working."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from eth_account import Account

from bursar_sdk import AsyncSandboxClient, BursarError, HostClient, SandboxClient, verify_webhook
from bursar_sdk.signing import sign_prepared

from conftest import env


class Receiver(BaseHTTPRequestHandler):
    got: list[tuple[dict[str, str], str]] = []
    arrived = threading.Condition()

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        with Receiver.arrived:
            Receiver.got.append((dict(self.headers), body))
            Receiver.arrived.notify_all()
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def delivery(kind: str) -> tuple[dict[str, str], str]:
    found = lambda: next(((h, b) for h, b in Receiver.got if json.loads(b)["type"] == kind), None)  # noqa: E731
    with Receiver.arrived:
        assert Receiver.arrived.wait_for(found, timeout=30), f"no {kind} delivery"
        return found()


@pytest.fixture(scope="module")
def world(devnet):
    relayer = env("BURSAR_RELAYER_URL")
    payee = env("X402_PAY_TO")
    host = HostClient(relayer, env("BURSAR_HOST_KEY"))
    server = HTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = host.create_webhook(f"http://127.0.0.1:{server.server_port}/hooks", ["payment.updated"])
    owner = devnet.funded_owner(50_000_000)
    list_id = devnet.allowlist([payee], "python")
    prepared = host.prepare_session({
        "owner": owner.address, "token": devnet.usdc, "deposit": "50000000", "perPaymentCap": "20000000",
        "periodBudget": "30000000", "periodSeconds": 3600, "expiresAt": devnet.now() + 86_400,
        "allowlistId": list_id, "metadata": "python sdk test",
    })
    opened = host.open_session(sign_prepared(owner, prepared))
    assert opened.status.value == "open"
    yield {
        "host": host, "payee": payee, "secret": endpoint.secret, "session": opened.session_id,
        "sandbox": SandboxClient(relayer, opened.capability_token), "token": opened.capability_token,
    }
    server.shutdown()


def test_limits_in_both_units(world):
    limits = world["sandbox"].limits()
    assert limits.token.symbol == "USDC"
    assert (limits.remaining_deposit.amount, limits.remaining_deposit.display) == ("50000000", "50.00 USDC")
    assert limits.per_payment_cap.display == "20.00 USDC"
    assert [c.address.lower() for c in limits.counterparties] == [world["payee"].lower()]
    assert limits.counterparties[0].label == "python"


def test_pays_once_under_a_retried_key(world, devnet):
    sandbox, payee = world["sandbox"], world["payee"]
    before = devnet.balance(payee)
    first = sandbox.pay(payee, "1.50 USDC", "a report", idempotency_key="py-pay-1")
    assert first.status.value == "confirmed"
    again = sandbox.pay(payee, 1_500_000, "a report", idempotency_key="py-pay-1")
    assert again.id == first.id
    assert devnet.balance(payee) - before == 1_500_000
    assert sandbox.payments(5)[0].id == first.id


def test_refusals_name_the_rule(world):
    sandbox = world["sandbox"]
    stranger = Account.create().address
    with pytest.raises(BursarError) as e:
        sandbox.pay(stranger, "1", "x")
    assert (e.value.status, e.value.code) == (422, "WalletCounterpartyNotAllowed")
    assert e.value.details["counterparty"].lower() == stranger.lower()
    with pytest.raises(BursarError) as e:
        sandbox.pay(world["payee"], "25 USDC", "x")
    assert e.value.code == "WalletPaymentCapExceeded"
    with pytest.raises(ValueError):
        sandbox.pay(world["payee"], "1.5 DAI", "x")


def test_heartbeat_and_provenance(world):
    sandbox = world["sandbox"]
    assert sandbox.heartbeat(world["session"]).session_id == world["session"]
    record = sandbox.record_provenance({"artifact": "report.pdf", "uri": "s3://reports/py"})
    assert record.status.value == "recorded" and record.record_id


def test_x402_fetch_within_max(world, devnet):
    sandbox, payee, url = world["sandbox"], world["payee"], env("X402_URL")
    before = devnet.balance(payee)
    with pytest.raises(BursarError) as e:
        sandbox.fetch("GET", url, max_amount="0.001 USDC")
    assert e.value.code == "price_over_max"
    answer = sandbox.fetch("GET", url, max_amount="0.05 USDC")
    assert answer.status_code == 200 and answer.json() == {"report": "all quiet"}
    assert devnet.balance(payee) - before == int(env("X402_PRICE"))


def test_buys_only_from_the_agent_meant_and_sells_only_for_an_agent(world, devnet):
    sandbox, payee, url = world["sandbox"], world["payee"], env("X402_URL")
    before = devnet.balance(payee)
    with pytest.raises(BursarError) as e:
        sandbox.fetch("GET", url, agent_id="999")
    assert e.value.code == "invalid_request"
    assert devnet.balance(payee) == before
    with pytest.raises(BursarError) as e:
        sandbox.x402_offer({"amount": "1000", "url": "https://sandbox.example/report"})
    assert (e.value.status, e.value.code) == (409, "session_has_no_agent")


def test_webhooks_verify(world):
    headers, body = delivery("payment.updated")
    assert verify_webhook(world["secret"], body, headers)["type"] == "payment.updated"
    with pytest.raises(Exception):
        verify_webhook(world["secret"], body + " ", headers)


def test_the_async_client_pays_too(world, devnet):
    async def run():
        sandbox = AsyncSandboxClient(env("BURSAR_RELAYER_URL"), world["token"])
        try:
            limits = await sandbox.limits()
            paid = await sandbox.pay(world["payee"], "0.10 USDC", "async")
            return limits, paid
        finally:
            await sandbox.aclose()

    before = devnet.balance(world["payee"])
    limits, paid = asyncio.run(run())
    assert limits.token.symbol == "USDC"
    assert paid.status.value == "confirmed"
    assert devnet.balance(world["payee"]) - before == 100_000


def test_revoked_the_token_stops_working(world):
    host = world["host"]
    assert host.revoke_session(world["session"]).capability_revoked
    with pytest.raises(BursarError) as e:
        world["sandbox"].limits()
    assert (e.value.status, e.value.code) == (401, "unauthorized")
    assert host.close_session(world["session"]).status.value in ("closed", "closing")
