"""An operator's consent to the authorization-code grant, given in a browser (docs/mcp.md "OAuth").

A server that wants a person to authorize the gateway cannot be served unattended: the SDK's
flow stops at the authorization server's page and resumes only with the code its redirect
carries. :class:`OperatorConsent` is that wait. When a connection finds its server needs
consent, it runs one flow in the background (:func:`~vocero.mcp_gateway.oauth.authorize`); the
flow's redirect lands here, is recorded as *pending* (``GET /v1/mcp/authorizations`` lists it
with the page to open), and waits until the authorization server sends the operator's browser
back to ``GET /v1/mcp/oauth/callback``. Callers are never held while it waits: their calls fail
at once with ``server_authorization_required``.

The record lives in the store, so the callback may reach any node: the node that receives it
leaves the answer (sealed) on the row, and the node whose flow holds the PKCE verifier reads it
there (at once when it is the same node, else at its next look, every ``poll_s``). Each node
waits on its own flow; when another node's grant lands first (the shared token record changes),
the others stop waiting and use it. Found by the SHA-256 of the ``state`` only; the answer is
single-use; nothing here logs a code, a state or the page's address.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol
from urllib.parse import parse_qs, urlsplit

import anyio
import msgspec
import structlog
from mcp.client.auth.exceptions import OAuthFlowError

from vocero.mcp_gateway.oauth import ConsentResult, Granted, Sealer
from vocero.mcp_gateway.tally import Tally

log = structlog.get_logger("vocero.mcp_gateway")

ConsentStatus = Literal["pending", "answered", "granted", "refused", "expired", "superseded"]


@dataclass(frozen=True, slots=True)
class PendingConsent:
    """One authorization waiting for an operator (what the operator API lists)."""

    id: str
    server: str
    node_id: str
    authorization_url: str
    status: ConsentStatus
    created_at: datetime
    expires_at: datetime


class ConsentRepository(Protocol):
    """Where consents live while a flow waits (the store's ``mcp_oauth_consents``)."""

    async def open(self, consent: PendingConsent, state_sha256: str) -> None: ...

    async def pending(self, now: datetime) -> list[PendingConsent]: ...

    async def answer(self, state_sha256: str, sealed: str, now: datetime) -> PendingConsent | None:
        """Leave the sealed answer on the pending, unexpired consent of that state (once)."""
        ...

    async def take(self, consent_id: str) -> str | None:
        """The sealed answer of an answered consent (``None`` while there is none)."""
        ...

    async def close(self, consent_id: str, status: ConsentStatus) -> None: ...


class _Answer(msgspec.Struct, kw_only=True):
    code: str = ""
    iss: str | None = None
    error: str = ""


@dataclass(slots=True)
class _Row:
    consent: PendingConsent
    state_sha256: str
    sealed: str | None = None


class InMemoryConsentRepository:
    """A single process's consents (tests, and a gateway without a store)."""

    def __init__(self) -> None:
        self.rows: dict[str, _Row] = {}

    async def open(self, consent: PendingConsent, state_sha256: str) -> None:
        self.rows[consent.id] = _Row(consent, state_sha256)

    async def pending(self, now: datetime) -> list[PendingConsent]:
        return [
            r.consent
            for r in self.rows.values()
            if r.consent.status == "pending" and r.consent.expires_at > now
        ]

    async def answer(self, state_sha256: str, sealed: str, now: datetime) -> PendingConsent | None:
        for row in self.rows.values():
            found = row.consent
            if row.state_sha256 == state_sha256 and found.status == "pending":
                if found.expires_at <= now:
                    return None
                row.sealed = sealed
                row.consent = replace(found, status="answered")
                return row.consent
        return None

    async def take(self, consent_id: str) -> str | None:
        row = self.rows.get(consent_id)
        return row.sealed if row is not None and row.consent.status == "answered" else None

    async def close(self, consent_id: str, status: ConsentStatus) -> None:
        row = self.rows.get(consent_id)
        if row is not None:
            row.consent = replace(row.consent, status=status)
            row.sealed = None


AuditFn = Callable[[str, dict[str, Any]], Awaitable[None]]


class ConsentRefused(OAuthFlowError):
    """The operator refused, or nobody answered in time: no tokens. The text names consent, so
    the gateway reports ``server_authorization_required``."""


class GrantedElsewhere(OAuthFlowError):
    """Another node obtained the tokens first: this flow stops and the stored grant is used."""


class OperatorConsent:
    """The :data:`Consent` of the background flow: record, wait for the callback, return it."""

    def __init__(
        self,
        repository: ConsentRepository,
        sealer: Sealer,
        *,
        node_id: str = "",
        timeout_s: float = 900.0,
        poll_s: float = 1.0,
        audit: AuditFn | None = None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.repository = repository
        self._sealer = sealer
        self.node_id = node_id
        self.timeout_s = timeout_s
        self.poll_s = poll_s
        self._audit = audit
        self._now = now
        self._arrived: dict[str, anyio.Event] = {}
        self._requested = Tally()

    async def wait(self, server: str, url: str, granted: Granted) -> ConsentResult:
        """Record the page ``url`` for an operator, then wait for the callback's answer.

        Raises :class:`ConsentRefused` (refused, expired) or :class:`GrantedElsewhere`."""
        state = _state_of(url)
        now = self._now()
        consent = PendingConsent(
            id=f"cns_{secrets.token_hex(12)}",
            server=server,
            node_id=self.node_id,
            authorization_url=url,
            status="pending",
            created_at=now,
            expires_at=now + timedelta(seconds=self.timeout_s),
        )
        arrived = self._arrived[consent.id] = anyio.Event()
        await self.repository.open(consent, _digest(state))
        await self._record("mcp.oauth_consent_requested", consent, "")
        log.info("mcp.oauth_consent_requested", server=server, consent_id=consent.id)
        self._requested.add()
        try:
            with anyio.move_on_after(self.timeout_s):
                while True:
                    sealed = await self.repository.take(consent.id)
                    if sealed is not None:
                        return await self._result(consent, sealed, state)
                    if await granted(server):
                        await self._closed(consent, "superseded")
                        raise GrantedElsewhere("consent given on another node")
                    with anyio.move_on_after(self.poll_s):
                        await arrived.wait()
            await self._closed(consent, "expired")
            raise ConsentRefused("operator consent expired")
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):  # the node stops: nobody can take it now
                await self._closed(consent, "expired")
            raise
        finally:
            del self._arrived[consent.id]

    @property
    def requested(self) -> int:
        """How many consents this node has asked for."""
        return self._requested.count

    async def wait_requested(self, count: int) -> None:
        """Until this node has asked for ``count`` consents (bounded by the caller)."""
        await self._requested.reach(count)

    async def answer(self, query: dict[str, str]) -> PendingConsent | None:
        """The authorization server's redirect (``code``/``error``, ``state``, ``iss``): left
        on its pending consent. ``None`` when no unexpired consent has that state."""
        state = query.get("state", "")
        if not state:
            return None
        answer = _Answer(
            code=query.get("code", ""), iss=query.get("iss") or None, error=query.get("error", "")
        )
        sealed = self._sealer.seal_text(msgspec.json.encode(answer).decode(), _CONTEXT)
        found = await self.repository.answer(_digest(state), sealed, self._now())
        if found is not None and (arrived := self._arrived.get(found.id)) is not None:
            arrived.set()
        return found

    async def pending(self) -> list[PendingConsent]:
        return await self.repository.pending(self._now())

    async def _result(self, consent: PendingConsent, sealed: str, state: str) -> ConsentResult:
        answer = msgspec.json.decode(self._sealer.open_text(sealed, _CONTEXT), type=_Answer)
        if answer.error or not answer.code:
            error = answer.error or "no_code"
            await self._closed(consent, "refused", error)
            raise ConsentRefused(f"operator consent refused ({error})")
        await self._closed(consent, "granted")
        return ConsentResult(code=answer.code, state=state, iss=answer.iss)

    async def _closed(
        self, consent: PendingConsent, status: ConsentStatus, error: str = ""
    ) -> None:
        await self.repository.close(consent.id, status)
        await self._record("mcp.oauth_consent_closed", replace(consent, status=status), error)
        log.info("mcp.oauth_consent_closed", server=consent.server, consent_id=consent.id,
                 status=status)

    async def _record(self, kind: str, consent: PendingConsent, error: str) -> None:
        if self._audit is None:
            return
        data: dict[str, Any] = {"server": consent.server, "consent_id": consent.id}
        if consent.status != "pending":
            data["status"] = consent.status
        if error:
            data["error"] = error[:64]
        await self._audit(kind, data)


_CONTEXT = "mcp-oauth-consent"


def _state_of(url: str) -> str:
    states = parse_qs(urlsplit(url).query).get("state") or [""]
    if not states[0]:
        raise OAuthFlowError("authorization request without state")
    return states[0]


def _digest(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()
