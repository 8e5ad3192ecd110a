"""An operator's consent to the authorization-code grant, given in a browser (docs/mcp.md "OAuth").

A server that wants a person to authorize the gateway cannot be served unattended: the SDK's
flow stops at the authorization server's page and resumes only with the code its redirect
carries. :class:`OperatorConsent` is that wait. When a connection finds its server needs
consent, it runs one flow in the background (:func:`~vocero.mcp_gateway.oauth.authorize`); the
flow's redirect lands here, is recorded as *pending* (``GET /v1/mcp/authorizations`` lists it
with the page to open), and waits until the authorization server sends the operator's browser
back to ``GET /oauth/mcp/callback``. Callers are never held while it waits: their calls fail
at once with ``server_authorization_required``.

The record lives in the store, so the callback may reach any node: the node that receives it
leaves the answer (sealed) on the row, and the node whose flow holds the PKCE verifier reads it
there (at once when it is the same node, else at its next look, every ``poll_s``). Each node
waits on its own flow; when another node's grant lands first (the shared token record changes),
the others stop waiting and use it. Found by the SHA-256 of the ``state`` only; the answer is
single-use; nothing here logs a code, a state or the page's address.

The callback is unauthenticated, so it is checked before anything is done with it: each
parameter's characters and length (:func:`callback_problem`), then the state is looked up
*read-only*; only a pending, unexpired state costs a seal and a write. An answer is audited
``answered`` when it lands; ``granted`` only once the token exchange stored tokens, ``failed``
with the reason when the authorization server refused the code (:meth:`OperatorConsent.settle`).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol
from urllib.parse import parse_qs, urlsplit

import anyio
import msgspec
import structlog
from mcp.client.auth.exceptions import OAuthFlowError

from vocero.contracts.clock import SystemClock
from vocero.contracts.ports import Timers
from vocero.mcp_gateway.oauth import ConsentResult, Granted, Sealer
from vocero.mcp_gateway.tally import Tally

log = structlog.get_logger("vocero.mcp_gateway")

ConsentStatus = Literal[
    "pending", "answered", "granted", "refused", "expired", "superseded", "failed"
]
FINAL: frozenset[ConsentStatus] = frozenset(
    {"granted", "refused", "expired", "superseded", "failed"}
)
CALLBACK_PARAMETERS: dict[str, tuple[re.Pattern[str], str]] = {
    # RFC 6749 §4.1.2 / appendix A: code and state are VSCHARs, error is NQSCHARs.
    "state": (re.compile(r"[\x21-\x7e]{1,512}"), "1 to 512 printable ASCII characters"),
    "code": (re.compile(r"[\x20-\x7e]{1,2048}"), "1 to 2048 printable ASCII characters"),
    "error": (
        re.compile(r"[\x20\x21\x23-\x5b\x5d-\x7e]{1,64}"),
        "1 to 64 printable ASCII characters, no quote or backslash",
    ),
    # RFC 9207: the issuer identifier, a URL.
    "iss": (re.compile(r"https?://[\x21-\x7e]{1,2040}"), "an http(s) URL of printable ASCII"),
}
"""What the authorization server's redirect may carry, and what each must look like."""


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

    async def find(self, state_sha256: str, now: datetime) -> PendingConsent | None:
        """The pending, unexpired consent of that state, read only (``None``: no such one)."""
        ...

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

    async def find(self, state_sha256: str, now: datetime) -> PendingConsent | None:
        for row in self.rows.values():
            found = row.consent
            if row.state_sha256 == state_sha256 and found.status == "pending":
                return found if found.expires_at > now else None
        return None

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
        clock: Timers | None = None,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self.repository = repository
        self._sealer = sealer
        self.node_id = node_id
        self.timeout_s = timeout_s
        self.poll_s = poll_s
        self._audit = audit
        self._clock: Timers = clock if clock is not None else SystemClock()
        self._now = now if now is not None else self._clock_now
        self._arrived: dict[str, anyio.Event] = {}
        self._exchanging: dict[str, PendingConsent] = {}
        """Per server: the consent whose code the flow is exchanging for tokens now."""
        self._settled: dict[str, _Settled] = {}
        self._requested = Tally()

    def _clock_now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.now(), UTC)

    async def wait(self, server: str, url: str, granted: Granted) -> ConsentResult:
        """Record the page ``url`` for an operator, then wait for the callback's answer.

        Raises :class:`ConsentRefused` (refused, expired) or :class:`GrantedElsewhere`. An
        answer with a code stays ``answered`` until :meth:`settle` says what the exchange did."""
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
        self._settled[consent.id] = _Settled()
        await self.repository.open(consent, _digest(state))
        await self._record("mcp.oauth_consent_requested", consent)
        log.info("mcp.oauth_consent_requested", server=server, consent_id=consent.id)
        self._requested.add()
        try:
            with self._clock.move_on_after(self.timeout_s):
                while True:
                    sealed = await self.repository.take(consent.id)
                    if sealed is not None:
                        return await self._result(consent, sealed, state)
                    if await granted(server):
                        await self._closed(consent, "superseded")
                        raise GrantedElsewhere("consent given on another node")
                    with self._clock.move_on_after(self.poll_s):
                        await arrived.wait()
            await self._closed(consent, "expired")
            raise ConsentRefused("operator consent expired")
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):  # the node stops: nobody can take it now
                await self._closed(consent, "expired")
            raise
        finally:
            del self._arrived[consent.id]

    async def settle(self, server: str, failure: str | None) -> None:
        """The flow of ``server`` ended: its answered consent is ``granted`` (tokens stored,
        ``failure`` is ``None``) or ``failed`` with the reason (the token exchange refused the
        code, the ``iss`` did not match ...). Nothing when no answer was being exchanged."""
        consent = self._exchanging.pop(server, None)
        if consent is None:
            return
        if failure is None:
            await self._closed(consent, "granted")
        else:
            await self._closed(consent, "failed", reason_code=failure)

    @property
    def requested(self) -> int:
        """How many consents this node has asked for."""
        return self._requested.count

    async def wait_requested(self, count: int) -> None:
        """Until this node has asked for ``count`` consents (bounded by the caller)."""
        await self._requested.reach(count)

    async def answer(self, query: Mapping[str, str]) -> PendingConsent | None:
        """The authorization server's redirect (``code``/``error``, ``state``, ``iss``, each
        checked by :func:`callback_problem` first): left on its pending consent. ``None`` when
        no unexpired consent has that state; then nothing was sealed or written."""
        state = query.get("state", "")
        if not state:
            return None
        digest = _digest(state)
        if await self.repository.find(digest, self._now()) is None:
            return None  # unknown, spent or expired: answered from a read
        answer = _Answer(
            code=query.get("code", ""), iss=query.get("iss") or None, error=query.get("error", "")
        )
        sealed = self._sealer.seal_text(msgspec.json.encode(answer).decode(), _CONTEXT)
        found = await self.repository.answer(digest, sealed, self._now())
        if found is None:
            return None  # another callback of the same state landed first
        await self._record("mcp.oauth_consent_answered", found, error=answer.error)
        log.info("mcp.oauth_consent_answered", server=found.server, consent_id=found.id)
        if (arrived := self._arrived.get(found.id)) is not None:
            arrived.set()
        return found

    async def outcome(
        self, consent: PendingConsent, within_s: float = 10.0
    ) -> tuple[ConsentStatus, str]:
        """How an answered consent ended, waited for up to ``within_s`` when this node's flow
        holds it: ``(status, reason)``. ``("answered", "")`` while the exchange is still
        running, or when another node's flow holds it (that node checks it)."""
        settled = self._settled.get(consent.id)
        if settled is None:
            return "answered", ""
        with self._clock.move_on_after(within_s):
            await settled.done.wait()
        if settled.done.is_set():
            del self._settled[consent.id]
        return settled.status, settled.reason_code

    async def pending(self) -> list[PendingConsent]:
        return await self.repository.pending(self._now())

    async def _result(self, consent: PendingConsent, sealed: str, state: str) -> ConsentResult:
        answer = msgspec.json.decode(self._sealer.open_text(sealed, _CONTEXT), type=_Answer)
        answered = replace(consent, status="answered")
        if answer.error or not answer.code:
            error = answer.error or "no_code"
            await self._closed(answered, "refused", error=error)
            raise ConsentRefused(f"operator consent refused ({error})")
        self._exchanging[consent.server] = answered  # granted once the tokens are stored
        return ConsentResult(code=answer.code, state=state, iss=answer.iss)

    async def _closed(
        self,
        consent: PendingConsent,
        status: ConsentStatus,
        *,
        error: str = "",
        reason_code: str = "",
    ) -> None:
        await self.repository.close(consent.id, status)
        closed = replace(consent, status=status)
        await self._record("mcp.oauth_consent_closed", closed, error=error, reason_code=reason_code)
        log.info(
            "mcp.oauth_consent_closed",
            server=consent.server,
            consent_id=consent.id,
            status=status,
            **({"reason_code": reason_code} if reason_code else {}),
        )
        if (settled := self._settled.get(consent.id)) is not None:
            settled.status, settled.reason_code = status, reason_code or error
            settled.done.set()
            if consent.status == "pending":  # never answered: no page will ask how it ended
                del self._settled[consent.id]
            while len(self._settled) > _SETTLED_KEPT:  # answered on another node, never asked
                del self._settled[next(iter(self._settled))]

    async def _record(
        self, kind: str, consent: PendingConsent, *, error: str = "", reason_code: str = ""
    ) -> None:
        if self._audit is None:
            return
        data: dict[str, Any] = {"server": consent.server, "consent_id": consent.id}
        if consent.status != "pending":
            data["status"] = consent.status
        if error:
            data["error"] = error[:64]
        if reason_code:
            data["reason_code"] = reason_code[:64]
        await self._audit(kind, data)


@dataclass(slots=True)
class _Settled:
    """How one of this node's consents ended (what the callback's page says)."""

    status: ConsentStatus = "answered"
    reason_code: str = ""
    done: anyio.Event = field(default_factory=anyio.Event)


def callback_problem(query: Mapping[str, Sequence[str]]) -> tuple[str, str] | None:
    """``(field, reason)`` of the first parameter of the redirect that is given twice or does
    not look like what it should (:data:`CALLBACK_PARAMETERS`); ``None`` when all are fine.
    Unknown parameters are ignored."""
    for name, (pattern, shape) in CALLBACK_PARAMETERS.items():
        values = query.get(name) or []
        if len(values) > 1:
            return name, "given more than once"
        if values and pattern.fullmatch(values[0]) is None:
            return name, f"must be {shape}"
    return None


_CONTEXT = "mcp-oauth-consent"
_SETTLED_KEPT = 64


def _state_of(url: str) -> str:
    """The ``state`` of an authorization page the console may link to (http(s) only)."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http"):
        raise OAuthFlowError("authorization page is not an http(s) address")
    states = parse_qs(parts.query).get("state") or [""]
    if not states[0]:
        raise OAuthFlowError("authorization request without state")
    return states[0]


def _digest(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()
