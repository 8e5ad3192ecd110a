"""Adapter for a customer identity API: ``GET {base_url}/api/v1/auth/user-by-phone?phone=``.

The API answers 200 with one user object holding the identities-file fields (``subject``,
``tenant``, ``roles``, ``scopes``, ``locale``, ``timezone``, ``phone``; unknown fields ignored) or
404 when nobody has that number. Anything else (timeout, transport failure, other status, a body
that does not validate) is :class:`IdentityApiError`: the API could not say, which is not the
same as "unknown caller". Credentials for the API live in ``headers``, set by configuration.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType

import anyio
import httpx
import msgspec
import structlog

from vocero.contracts.domain import Caller
from vocero.contracts.errors import ErrorCode, VoceroError
from vocero.contracts.secrets import NO_SECRET
from vocero.identity.identities import check_timezone

log = structlog.get_logger(__name__)

USER_BY_PHONE = "/api/v1/auth/user-by-phone"


class IdentityApiError(VoceroError):
    """The identity API did not give a usable answer; retrying later may help."""

    code = ErrorCode.INTERNAL


class _ApiUser(msgspec.Struct, frozen=True, kw_only=True):
    subject: str
    tenant: str
    roles: list[str] = []
    scopes: list[str] = []
    locale: str = "en-US"
    timezone: str = "UTC"
    phone: str = ""


class IdentityApi:
    """Looks callers up by phone number over HTTP; one lookup takes at most ``timeout_s``."""

    def __init__(
        self,
        base_url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 2.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._timeout_s = timeout_s
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            headers=dict(headers or {}),
            timeout=httpx.Timeout(timeout_s),
            transport=transport,
            follow_redirects=False,
        )

    async def __aenter__(self) -> IdentityApi:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()

    async def by_phone(self, phone: str) -> Caller | None:
        """The caller with this phone number, ``None`` when the API does not know it."""
        try:
            # httpx times each phase; the deadline bounds the whole lookup, whatever the transport.
            with anyio.fail_after(self._timeout_s):
                response = await self._client.get(USER_BY_PHONE, params={"phone": phone})
        except (TimeoutError, httpx.TimeoutException) as exc:
            log.warning("identity_api.timeout")
            raise IdentityApiError("identity API timed out") from exc
        except httpx.HTTPError as exc:
            log.warning("identity_api.unreachable", error=type(exc).__name__)
            raise IdentityApiError("identity API unreachable") from exc
        if response.status_code == httpx.codes.NOT_FOUND:
            return None
        if response.status_code != httpx.codes.OK:
            log.warning("identity_api.bad_status", status=response.status_code)
            raise IdentityApiError(f"identity API answered {response.status_code}")
        return _caller_from(response.content, phone)


def _caller_from(body: bytes, phone: str) -> Caller:
    try:
        user = msgspec.json.decode(body, type=_ApiUser)
    except msgspec.DecodeError as exc:
        log.warning("identity_api.invalid_user", problem=str(exc))
        raise IdentityApiError("identity API returned an invalid user") from exc
    if not user.subject or not user.tenant or check_timezone(user.timezone):
        log.warning("identity_api.invalid_user", problem="empty subject/tenant or bad timezone")
        raise IdentityApiError("identity API returned an invalid user")
    return Caller(
        token=NO_SECRET,
        subject=user.subject,
        tenant=user.tenant,
        roles=list(user.roles),
        scopes=list(user.scopes),
        locale=user.locale,
        timezone=user.timezone,
        phone=user.phone or phone,
    )
