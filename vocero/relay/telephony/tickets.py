"""Stream tickets: the webhook's answer to a known caller carries one, the media stream that
answer opens must present it (SPEC §10; ``docs/telephony.md``, "Tickets").

A ticket is random, bound to the ``CallSid`` the webhook was called for and to the caller found
for its ``From``, good once, for :data:`TICKET_TTL_S` on the given clock. Only a digest is kept,
in this process's memory: the carrier's stream must reach the worker that answered its webhook
(one worker, or a proxy that keeps a call on one worker; docs/telephony.md says so). A
ticket not redeemed in time is forgotten; the book is bounded (:data:`MAX_OPEN`).
"""

from __future__ import annotations

import hashlib
import secrets
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from vocero.contracts.domain import Caller

TICKET_TTL_S = 30.0
MAX_OPEN = 10_000
"""Tickets waiting at once; past it the oldest is dropped (its call then fails to connect)."""
REMEMBERED = 10_000
"""Used and expired tickets remembered, so that a late try says which it was."""


class TicketRefused(Exception):
    """A stream's ticket is not good: ``reason_code`` says why."""

    def __init__(self, reason_code: str) -> None:
        super().__init__(reason_code)
        self.reason_code = reason_code


@dataclass(frozen=True, slots=True)
class Admitted:
    """What a good ticket admits: the caller, and for a call-back the follow-up it answers and
    the agent's first line (docs/followups.md "Call-backs through the carrier")."""

    caller: Caller
    followup_id: str = ""
    opening: str = ""


@dataclass(frozen=True, slots=True)
class _Issued:
    call_sid: str
    admitted: Admitted
    expires_at: float


class TicketBook:
    """Tickets issued by the webhook and redeemed by the stream, in this process."""

    def __init__(self, clock: Callable[[], float], ttl_s: float = TICKET_TTL_S) -> None:
        self.clock = clock
        self.ttl_s = ttl_s
        self._open: OrderedDict[str, _Issued] = OrderedDict()
        self._closed: OrderedDict[str, str] = OrderedDict()
        """Digest -> why it can no longer be redeemed (``ticket_reused``, ``ticket_expired``)."""

    def issue(self, call_sid: str, caller: Caller, *, followup_id: str = "",
              opening: str = "") -> str:
        """A new ticket for the stream of ``call_sid``, for ``caller`` (on a call-back, with the
        follow-up it answers and the agent's first line)."""
        self._forget_expired()
        ticket = secrets.token_urlsafe(24)
        admitted = Admitted(caller, followup_id=followup_id, opening=opening)
        self._open[_digest(ticket)] = _Issued(call_sid, admitted, self.clock() + self.ttl_s)
        while len(self._open) > MAX_OPEN:
            self._open.popitem(last=False)
        return ticket

    def redeem(self, ticket: str, call_sid: str) -> Caller:
        """The caller the ticket was issued for (:meth:`admit`)."""
        return self.admit(ticket, call_sid).caller

    def admit(self, ticket: str, call_sid: str) -> Admitted:
        """What the ticket was issued for; the ticket is used up whatever the outcome.
        Raises :class:`TicketRefused` (``ticket_missing``, ``ticket_reused``,
        ``ticket_unknown``, ``ticket_expired``, ``ticket_other_call``)."""
        if not ticket:
            raise TicketRefused("ticket_missing")
        key = _digest(ticket)
        issued = self._open.pop(key, None)
        if issued is None:
            raise TicketRefused(self._closed.get(key, "ticket_unknown"))
        self._close(key, "ticket_reused")
        if self.clock() >= issued.expires_at:
            raise TicketRefused("ticket_expired")
        if not secrets.compare_digest(issued.call_sid.encode(), call_sid.encode()):
            raise TicketRefused("ticket_other_call")
        return issued.admitted

    def _forget_expired(self) -> None:
        now = self.clock()
        while self._open:
            key, first = next(iter(self._open.items()))
            if first.expires_at > now:
                return
            del self._open[key]
            self._close(key, "ticket_expired")

    def _close(self, key: str, reason: str) -> None:
        self._closed[key] = reason
        while len(self._closed) > REMEMBERED:
            self._closed.popitem(last=False)


def _digest(ticket: str) -> str:
    return hashlib.sha256(ticket.encode()).hexdigest()
