import httpx
import pytest

from bursar_sdk import BursarError, format_amount, parse_amount
from bursar_sdk._http import Transport


def test_amounts_read_as_people_write_them():
    assert parse_amount("1.50 USDC", "USDC", 6) == 1_500_000
    assert parse_amount("1.5 usdc", "USDC", 6) == 1_500_000
    assert parse_amount("1500000", "USDC", 6) == 1_500_000
    assert parse_amount(".25", "USDC", 6) == 250_000
    for bad in ["1.5 DAI", "0.0000001", "-1", "1e6", "1.2.3", ".", "", "one USDC", "0x10", "1,50", "1 USDC x"]:
        with pytest.raises(ValueError):
            parse_amount(bad, "USDC", 6)


def test_amounts_shown_and_read_back():
    assert format_amount(1_500_000, "USDC", 6) == "1.50 USDC"
    assert format_amount(1, "USDC", 6) == "0.000001 USDC"
    for n in [0, 1, 10, 999_999, 1_000_000, 123_456_789]:
        assert parse_amount(format_amount(n, "USDC", 6), "USDC", 6) == n


def test_a_post_is_retried_under_one_idempotency_key():
    keys, calls = [], []

    def answer(request: httpx.Request) -> httpx.Response:
        keys.append(request.headers.get("Idempotency-Key"))
        calls.append(1)
        if len(calls) == 1:
            raise httpx.ConnectError("reset", request=request)
        if len(calls) == 2:
            return httpx.Response(503, json={})
        return httpx.Response(202, json={"id": "pay_1"})

    http = httpx.Client(base_url="http://relayer.test", transport=httpx.MockTransport(answer))
    t = Transport("http://relayer.test", "bct_x", 3, http)
    assert t.call("POST", "/v1/payments", json={"a": 1}) == {"id": "pay_1"}
    assert len(calls) == 3 and len(set(keys)) == 1 and keys[0]


def test_refusals_are_not_retried_and_carry_the_code():
    calls = []

    def answer(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(422, json={"code": "WalletPaymentCapExceeded", "message": "over", "details": {"cap": "1"}})

    t = Transport("http://relayer.test", None, 3, httpx.Client(base_url="http://relayer.test",
                                                              transport=httpx.MockTransport(answer)))
    with pytest.raises(BursarError) as e:
        t.call("POST", "/v1/payments", json={})
    assert (e.value.status, e.value.code, e.value.details) == (422, "WalletPaymentCapExceeded", {"cap": "1"})
    assert len(calls) == 1
