"""The contract between the conversation (orchestrator) and the action path (policy plane).

The model proposes; the application decides. The orchestrator hands every tool intent to an
:class:`ActionCoordinator`, which returns a :class:`ToolPlan`: run it now (an authorized read or an
already confirmed action), ask the caller to confirm an exact proposal, or deny with a reason code.
Confirmations (spoken or clicked) go back through the coordinator, which alone decides whether they
bind. Execution reports every status change through a callback so the caller sees it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol

import msgspec

from vocero.contracts.events import ToolStatus
from vocero.contracts.ports import InputHandler, Message, ToolIntent


class TurnRef(msgspec.Struct, frozen=True, kw_only=True):
    session_id: str
    turn_id: str
    generation_id: str = ""
    traceparent: str = ""


class Disclosure(msgspec.Struct, frozen=True, kw_only=True):
    """A required disclosure the caller has not heard yet in this session (ADR-0030): said
    verbatim before the read-back, as a ``claim`` unit citing ``step_id`` at ``version``."""

    step_id: str
    version: str
    text: str


class ToolPlan(msgspec.Struct, frozen=True, kw_only=True):
    kind: Literal["run", "confirm", "deny"]
    tool: str
    tool_call_id: str = ""
    proposal_id: str = ""
    revision: int = 0
    summary: str = ""
    """Speakable read-back (confirm) or explanation (deny)."""
    fields: dict[str, Any] = {}
    expires_at: str = ""
    reason_code: str = ""
    result: dict[str, Any] | None = None
    """A denial's answer as the model sees it (a built-in tool's ``NOT recorded``); ``None``:
    the model is not told of the call."""
    disclosures: list[Disclosure] = []
    """``confirm``: what must be said before the read-back (each heard by playout before the
    write may run)."""


class ToolOutcome(msgspec.Struct, frozen=True, kw_only=True):
    tool_call_id: str
    proposal_id: str = ""
    status: ToolStatus
    result: dict[str, Any] | None = None
    reason_code: str = ""
    side_effect: bool = False
    """True when the operation may have changed a downstream system."""
    arguments: dict[str, Any] = {}
    """The canonical arguments the call was made with (what a read-out may refer to)."""


class ConfirmationVerdict(msgspec.Struct, frozen=True, kw_only=True):
    binds: bool
    plan: ToolPlan | None = None
    reason_code: str = ""
    """Why it did not bind: ``no_active_question``, ``proposal_changed``, ``expired``, …"""


StatusCallback = Callable[[str, str, ToolStatus, str], None]
"""(tool_call_id, proposal_id, status, reason_code) -> None; must not block."""


class ActionCoordinator(Protocol):
    async def propose(
        self,
        turn: TurnRef,
        intent: ToolIntent,
        *,
        history: Sequence[Message] = (),
        locale: str = "",
    ) -> ToolPlan:
        """Decide on a tool intent; ``history`` is the conversation as the caller heard it,
        ``locale`` the session's effective one (empty: the caller's)."""
        ...

    async def execute(self, plan: ToolPlan, on_status: StatusCallback) -> ToolOutcome: ...

    async def submit_confirmation(
        self,
        turn: TurnRef | None,
        proposal_id: str,
        revision: int,
        decision: Literal["confirm", "reject", "uncertain"],
        *,
        source: Literal["button", "speech"],
        restated: bool = False,
    ) -> ConfirmationVerdict:
        """``restated``: the spoken answer names the proposal itself ("Yes, please move it"),
        so it answers that question even when something else was heard after it."""
        ...

    def active_question(self) -> ToolPlan | None:
        """The proposal the caller was last asked to confirm, while it can still bind."""
        ...

    async def record_delivery(
        self, generation_id: str, *, heard_text: str, complete: bool, observable: bool = True
    ) -> None:
        """Evidence: what the caller heard of a generation (by playout), and whether it played
        to its end. ``observable`` is false when the client cannot report playout: then
        delivery can be neither proven nor denied."""
        ...

    async def drop_question(self, proposal_id: str, revision: int) -> None:
        """The conversation gives up on the question: it can no longer be confirmed."""
        ...

    def set_input_handler(self, ask: InputHandler | None) -> None:
        """Who answers a server's questions during this session's tool calls."""
        ...

    def withdrawable(self) -> ToolPlan | None:
        """A confirmed operation of the session that has not been sent yet."""
        ...

    async def withdraw(self, turn: TurnRef) -> str:
        """Withdraw it (if still unsent); returns what to tell the caller."""
        ...

    async def readback_started(self, plan: ToolPlan, generation_id: str) -> None:
        """Evidence: the question ``plan`` is being read to the caller again (after a
        clarification) in ``generation_id``; only that generation's delivery can satisfy it."""
        ...
