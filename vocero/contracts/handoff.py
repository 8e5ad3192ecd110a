"""Handing a caller to a person (docs/telephony.md "Handing a caller to a person").

A profile's ``handoff`` setting (:class:`~vocero.contracts.domain.HandoffSettings`) makes the
built-in tool ``handoff.request`` available: the model picks it when the caller asks for a
person, and the orchestrator proposes it itself once the policy refused the caller
``after_denials`` times. It goes through the policy gate like any tool and runs as an audited
operation; on the phone it puts the call through with the carrier's REST API (the
:class:`CallTransfer` port, implemented beside the carrier's media stream), on the web, or when
the carrier refuses, it records a ``task`` follow-up for a person to call the caller back.

The words the caller hears are Vocero's own and say only what happened: a transfer is
announced before it is made (and made only once that announcement was heard), a failed transfer
is said as failed, and nothing here promises a call at a time nobody agreed.
"""

from __future__ import annotations

import re
from typing import Protocol

from vocero.contracts.builtins import HANDOFF_TOOL, VOCERO_SERVER
from vocero.contracts.domain import ToolSpec

E164 = re.compile(r"^\+[1-9]\d{7,14}$")
"""A phone number a handoff may dial: ``+``, country code, 8 to 15 digits in all."""
MAX_MESSAGE = 300
ANNOUNCEMENT = "I'm putting you through to a person now. Please stay on the line."
"""What the caller hears before the call is put through (the profile's ``message`` instead)."""
PASSED_ON = (
    "I can't put you through to a person from here, so I've passed your request to our team, "
    "with what we've talked about."
)
"""Said on the web, once the ``task`` follow-up is recorded."""
TRANSFER_FAILED = (
    "I'm sorry, I couldn't put you through just now. I've passed your request to our team "
    "instead, with what we've talked about."
)
"""Said when the carrier refused the transfer and a ``task`` follow-up was recorded instead."""
NOT_PASSED_ON = "I'm sorry, I couldn't pass your request on just now."
"""Said when neither the transfer nor the follow-up could be made."""
ALREADY = "Your request for a person is already with our team."
"""Said when the caller asks again in a session already handed off (nothing runs again)."""
"""Said when neither the transfer nor the follow-up could be made."""
TOOL_DESCRIPTION = (
    "Hand the caller to a person of our team, when they ask to speak to a person, a human, an "
    "agent or an operator."
)


def handoff_tool() -> ToolSpec:
    """The profile tool a ``handoff`` setting adds when the profile lists none resolving to
    ``handoff.request``: a reversible write without a confirmation question (asking for a
    person is the caller's own request) and without scopes (every caller may ask). No
    example lines: the CPU dialogue manager's "person" act routes to it (a second class of the
    same lines would split that act)."""
    return ToolSpec(
        name=HANDOFF_TOOL, server=VOCERO_SERVER, resolves_to=HANDOFF_TOOL,
        action_class="reversible_write", requires_confirmation=False,
        description=TOOL_DESCRIPTION, timeout_ms=15000,
    )


class TransferFailed(Exception):
    """The carrier did not put the call through; ``reason_code`` says why (audited)."""

    def __init__(self, reason_code: str, status: int = 0) -> None:
        super().__init__(reason_code)
        self.reason_code = reason_code
        self.status = status


class CallTransfer(Protocol):
    """Puts a live phone call through to a number (the carrier's REST API)."""

    async def transfer(self, call_sid: str, number: str) -> None:
        """Redirect call ``call_sid`` to ``number``; raises :class:`TransferFailed`."""
        ...
