"""Who may open a session on ``/v1/realtime`` (``docs/protocol.md``, "Session lifecycle";
``docs/adr/0011-one-node-with-admission.md``).

Before the upgrade is accepted, a browser ``Origin`` must be allowed (else HTTP 403) and the
client's address may hold only so many connections that have not authenticated yet (else HTTP
429). At ``session.connect.v1`` the caller must authenticate, the server must be warm and not
draining, the caller must have an agent profile, and a session slot (``--max-sessions``) must be
free. The profile is chosen before the slot is taken, and the slot is taken in the same step as
the cap is checked; every way out of the connection gives the slot back.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import structlog

from vocero.contracts import events as ev
from vocero.contracts.domain import AgentProfile, Caller
from vocero.contracts.errors import AuthError, CloseCode, ErrorCode
from vocero.contracts.secrets import Secret
from vocero.orchestrator.ids import new_id
from vocero.relay.ports import RelayConfig

UNKNOWN_TOKEN = "unknown_token"
"""The reason code of a token that is not a JWT and not in the identities file."""
HTTP_FORBIDDEN = 403
HTTP_TOO_MANY_REQUESTS = 429

log = structlog.get_logger("vocero.relay")


class Refused(Exception):
    """A connect turned away: the client gets ``error.v1`` ``code``, then close ``close``."""

    def __init__(self, code: ErrorCode, close: int) -> None:
        super().__init__(code.value)
        self.code = code
        self.close = close


@dataclass(frozen=True, slots=True)
class Admitted:
    """A connect that may open its session: who calls, the profile it gets, and the resume
    token it sent (``None`` for a new session)."""

    caller: Caller
    profile: AgentProfile
    resume_token: Secret | None


class Admission:
    """Admits one connection: the upgrade checks, then the connect's, holding the pending count
    and the session slot the connection takes on the way and giving them back."""

    def __init__(self, config: RelayConfig) -> None:
        self.config = config
        self.pending_address: str | None = None
        """The address counted as pending (not yet authenticated), until it is released."""
        self.slot = ""
        """The session slot this connection holds (``--max-sessions``), once admitted."""

    def upgrade_refusal(self, origin: str | None, host: str, address: str) -> int | None:
        """The HTTP status refusing this upgrade, or ``None``: a browser page of an origin that
        is not allowed (403), or an address already holding its share of pending connections
        (429). Otherwise the connection counts as pending until it authenticates."""
        if not self.config.origins.allows(origin, host):
            log.warning("relay.origin_refused")
            return HTTP_FORBIDDEN
        if not self.config.pending.enter(address):
            log.warning("relay.pending_limit", limit=self.config.pending.limit)
            return HTTP_TOO_MANY_REQUESTS
        self.pending_address = address
        return None

    def leave_pending(self) -> None:
        if self.pending_address is not None:
            self.config.pending.leave(self.pending_address)
            self.pending_address = None

    async def admit(self, connect: ev.Connect) -> Admitted:
        """Admit the connect, holding a session slot; raises :class:`Refused` (the slot given
        back) when the server drains or warms, the token or the profile is refused, or every
        slot is taken."""
        config = self.config
        if config.draining:
            raise self.refuse(ErrorCode.SHUTTING_DOWN, CloseCode.TRY_AGAIN_LATER)
        try:
            caller = await config.authenticate(connect.token)
            reason = UNKNOWN_TOKEN
        except AuthError as exc:  # a JWT refused: its reason code (SPEC §11)
            caller, reason = None, str(exc) or UNKNOWN_TOKEN
        if caller is None:
            # Never the token: a short digest lets an operator match repeated attempts.
            token_ref = hashlib.sha256(connect.token.encode()).hexdigest()[:16]
            config.factory.audit(
                "session.auth_denied", {"reason_code": reason, "token_ref": token_ref}
            )
            config.metrics.count("denials", reason_code=reason)
            log.info("relay.auth_denied", reason_code=reason)
            raise self.refuse(ErrorCode.AUTH_DENIED, CloseCode.AUTH_DENIED)
        self.leave_pending()
        if config.wait_ready is not None and not await config.wait_ready():
            raise self.refuse(ErrorCode.CAPACITY_EXHAUSTED, CloseCode.TRY_AGAIN_LATER)
        # The profile first, then the slot: choosing a profile awaits the store (a reloaded
        # file, a rollback), and a caller with no profile must never hold a slot meanwhile,
        # or a burst of such connects would turn away callers who have one.
        try:
            profile = await config.select_profile(caller)
        except AuthError:
            config.factory.audit(
                "session.profile_denied",
                {"tenant_id": caller.tenant, "subject_ref": caller.subject_ref},
            )
            raise self.refuse(ErrorCode.PROFILE_DENIED, CloseCode.PROFILE_DENIED) from None
        if not self.take_slot():
            raise self.refuse(ErrorCode.CAPACITY_EXHAUSTED, CloseCode.TRY_AGAIN_LATER)
        resume = connect.resume_token
        return Admitted(caller, profile, Secret(resume, remember=False) if resume else None)

    def refuse(self, code: ErrorCode, close: int) -> Refused:
        """Turn the connect away: give the slot back at once (a refused connect never holds
        one while it closes), count the outcome, and return what to raise."""
        self.release_slot()
        self.config.metrics.count(
            "sessions", outcome="denied" if close != CloseCode.TRY_AGAIN_LATER else "rejected"
        )
        return Refused(code, close)

    def take_slot(self) -> bool:
        """Check the cap and take a slot in one step: no await between the two, so concurrent
        connects cannot all pass the check before any of them is counted."""
        active = self.config.active
        if len(active) >= self.config.max_sessions:
            return False
        self.slot = new_id("slot")
        active.add(self.slot)
        self.config.metrics.gauge("active_sessions", len(active))
        return True

    def release_slot(self) -> None:
        if self.slot:
            self.config.active.discard(self.slot)
            self.slot = ""
            self.config.metrics.gauge("active_sessions", len(self.config.active))
