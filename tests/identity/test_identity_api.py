"""The customer identity API adapter, driven through ``httpx.MockTransport``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import httpx
import pytest

from vocero.contracts.domain import Caller
from vocero.identity.identity_api import USER_BY_PHONE, IdentityApi, IdentityApiError

Handler = Callable[[httpx.Request], httpx.Response]

USER = {
    "subject": "alice",
    "tenant": "acme",
    "roles": ["customer"],
    "scopes": ["orders:read"],
    "locale": "es-ES",
    "timezone": "Europe/Madrid",
    "phone": "+34600000001",
    "email": "ignored@example.com",
}


def _lookup(handler: Handler, phone: str = "+34600000001", **options: Any) -> Caller | None:
    async def main() -> Caller | None:
        transport = httpx.MockTransport(handler)
        async with IdentityApi("http://identity.test/", transport=transport, **options) as api:
            return await api.by_phone(phone)

    return anyio.run(main)


def _answer(status: int, body: Any = None) -> Handler:
    return lambda _request: httpx.Response(status, json=body)


def test_known_phone_returns_the_caller() -> None:
    caller = _lookup(_answer(200, USER))
    assert caller is not None
    assert (caller.subject, caller.tenant, caller.roles) == ("alice", "acme", ["customer"])
    assert (caller.locale, caller.timezone, caller.phone) == (
        "es-ES",
        "Europe/Madrid",
        "+34600000001",
    )
    assert caller.token == ""


def test_request_shape_and_configured_headers() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=USER)

    _lookup(handler, phone="+34 600 000 001", headers={"Authorization": "Bearer k"})
    (request,) = seen
    assert request.method == "GET"
    assert request.url.path == USER_BY_PHONE
    assert request.url.params["phone"] == "+34 600 000 001"
    assert request.headers["authorization"] == "Bearer k"


def test_unknown_phone_is_none() -> None:
    assert _lookup(_answer(404, {"detail": "not found"})) is None


def test_phone_defaults_to_the_one_asked_for() -> None:
    caller = _lookup(_answer(200, {"subject": "s", "tenant": "t"}), phone="+1555")
    assert caller is not None
    assert (caller.phone, caller.timezone, caller.roles) == ("+1555", "UTC", [])


@pytest.mark.parametrize("status", [401, 403, 500, 503, 302])
def test_other_statuses_are_errors(status: int) -> None:
    with pytest.raises(IdentityApiError, match=str(status)):
        _lookup(_answer(status, {}))


@pytest.mark.parametrize(
    "body",
    [
        {"tenant": "acme"},
        {"subject": "s", "tenant": "acme", "roles": "customer"},
        {"subject": "s", "tenant": "acme", "timezone": "Nowhere/City"},
        {"subject": "", "tenant": "acme"},
        ["not", "an", "object"],
    ],
)
def test_invalid_user_records_are_errors(body: Any) -> None:
    with pytest.raises(IdentityApiError, match="invalid user"):
        _lookup(_answer(200, body))


def test_non_json_body_is_an_error() -> None:
    with pytest.raises(IdentityApiError):
        _lookup(lambda _r: httpx.Response(200, content=b"<html>"))


def test_timeout_is_an_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    with pytest.raises(IdentityApiError, match="timed out") as caught:
        _lookup(handler)
    assert caught.value.retryable


def test_transport_failure_is_an_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with pytest.raises(IdentityApiError, match="unreachable"):
        _lookup(handler)


def test_slow_api_times_out_for_real() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        await anyio.sleep(5)
        return httpx.Response(200, json=USER)

    async def main() -> None:
        transport = httpx.MockTransport(handler)
        async with IdentityApi("http://identity.test", transport=transport, timeout_s=0.05) as api:
            with anyio.fail_after(2):
                await api.by_phone("+1")

    with pytest.raises(IdentityApiError):
        anyio.run(main)
