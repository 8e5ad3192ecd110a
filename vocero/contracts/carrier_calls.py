"""Placing a follow-up's call-back through the carrier (docs/followups.md "Call-backs through
the carrier"; ADR-0035).

The built-in call tool ``carrier.call`` (:mod:`vocero.followups.carrier_call`) asks a
:class:`CallPlacer` to ring a number; the carrier's REST client (beside its media stream,
:mod:`vocero.relay.telephony.outbound`) implements it. When the person answers, the carrier
requests the deployment's Voice webhook with ``?followup=<id>`` and the call is connected to a
session that opens with :func:`opening_line`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from vocero.contracts.builtins import CARRIER_CALL_TOOL

__all__ = ["CARRIER_CALL_TOOL", "CallNotPlaced", "CallPlacer", "PlacedCall", "opening_line"]

FOLLOWUP_PARAMETER = "followup"
"""The Voice webhook's query parameter naming the follow-up an outbound call is for."""


@dataclass(frozen=True, slots=True)
class PlacedCall:
    """The carrier accepted the call (HTTP 201): its id."""

    call_sid: str
    status: str = ""


class CallNotPlaced(Exception):
    """The carrier did not accept the call. ``busy``: it may take it later (429, 5xx, or it
    could not be reached: nothing was created); otherwise it refused it (4xx). ``unknown``: the
    request may have reached the carrier and its answer was lost (a timeout): it may ring."""

    def __init__(self, reason_code: str, *, status: int = 0, busy: bool = False,
                 unknown: bool = False) -> None:
        super().__init__(reason_code)
        self.reason_code = reason_code
        self.status = status
        self.busy = busy
        self.unknown = unknown


class CallPlacer(Protocol):
    """Creates an outbound call with the carrier's REST API."""

    async def place(self, *, to: str, from_: str, followup_id: str) -> PlacedCall:
        """Ring ``to`` from ``from_``; when answered, the carrier asks the Voice webhook for
        follow-up ``followup_id``. Raises :class:`CallNotPlaced`."""
        ...


def opening_line(reason: str, agent_name: str = "") -> str:
    """The agent's first line on an answered call-back: who is calling, and why (the follow-up's
    reason, as recorded)."""
    about = " ".join(reason.split()).rstrip(" .")
    if about.lower().startswith("about "):
        about = about[len("about "):]
    name = " ".join(agent_name.split())
    opener = f"Hello, this is {name} calling back" if name else "Hello, I'm calling back"
    return f"{opener} about {_lower_first(about)}." if about else f"{opener} as promised."


def _lower_first(text: str) -> str:
    """"The invoice" -> "the invoice" (an acronym or a name stays as it is)."""
    first = text.split(" ", 1)[0]
    if len(first) > 1 and first[1:].islower() and first[0].isupper() and first in (
        "The", "A", "An", "Your", "My", "Our"):
        return text[0].lower() + text[1:]
    return text
