"""The session state machine of seed 004 §7.1 as one sans-IO transition table.

No awaits and no effects here: the async shell (:mod:`vocero.orchestrator.session`) feeds events
and performs effects. A transition not in the table raises :class:`InvalidTransition`.
"""

from __future__ import annotations

import enum
from typing import get_args

from vocero.contracts.events import SessionState

STATES: frozenset[str] = frozenset(get_args(SessionState))
TERMINAL: frozenset[str] = frozenset({"CLOSING", "FAILED"})


class Event(enum.StrEnum):
    TRANSPORT_READY = "transport_ready"
    IDENTITY_VALID = "identity_valid"
    IDENTITY_REJECTED = "identity_rejected"
    CONFIGURED = "configured"
    SPEECH_STARTED = "speech_started"
    SPEECH_DISCARDED = "speech_discarded"
    TURN_COMMITTED = "turn_committed"
    TOOL_INTENT = "tool_intent"
    SENSITIVE_ACTION = "sensitive_action"
    ALLOWED = "allowed"
    DENIED = "denied"
    CONFIRMED = "confirmed"
    DECLINED = "declined"
    TOOL_RESULT = "tool_result"
    AUDIO_FIRST_CHUNK = "audio_first_chunk"
    BARGE_IN = "barge_in"
    OUTPUT_STOPPED = "output_stopped"
    RESPONSE_COMPLETED = "response_completed"
    DEPENDENCY_FAILED = "dependency_failed"
    DEPENDENCY_RECOVERED = "dependency_recovered"
    CLOSE = "close"
    FAIL = "fail"


E = Event

TRANSITIONS: dict[tuple[str, Event], str] = {
    ("CONNECTING", E.TRANSPORT_READY): "AUTHENTICATING",
    ("AUTHENTICATING", E.IDENTITY_VALID): "CONFIGURING",
    ("AUTHENTICATING", E.IDENTITY_REJECTED): "FAILED",
    ("CONFIGURING", E.CONFIGURED): "LISTENING",
    ("CONFIGURING", E.IDENTITY_REJECTED): "FAILED",
    # Listening: caller speech, typed or push-to-talk turns, a confirmation button.
    ("LISTENING", E.SPEECH_STARTED): "TRANSCRIBING",
    ("LISTENING", E.TURN_COMMITTED): "THINKING",
    ("LISTENING", E.CONFIRMED): "TOOL_RUNNING",
    ("LISTENING", E.DEPENDENCY_FAILED): "DEGRADED",
    ("TRANSCRIBING", E.TURN_COMMITTED): "THINKING",
    ("TRANSCRIBING", E.SPEECH_DISCARDED): "LISTENING",
    ("TRANSCRIBING", E.DEPENDENCY_FAILED): "DEGRADED",
    # Thinking: the model answers, asks for a tool, or the caller's "yes" binds.
    ("THINKING", E.TOOL_INTENT): "TOOL_PENDING",
    ("THINKING", E.AUDIO_FIRST_CHUNK): "SPEAKING",
    ("THINKING", E.RESPONSE_COMPLETED): "LISTENING",
    ("THINKING", E.CONFIRMED): "TOOL_RUNNING",
    ("THINKING", E.BARGE_IN): "INTERRUPTING",
    ("THINKING", E.DEPENDENCY_FAILED): "DEGRADED",
    # The gate decides: run, ask the caller, or explain a denial.
    ("TOOL_PENDING", E.ALLOWED): "TOOL_RUNNING",
    ("TOOL_PENDING", E.SENSITIVE_ACTION): "AWAITING_CONFIRMATION",
    ("TOOL_PENDING", E.DENIED): "THINKING",
    ("TOOL_PENDING", E.BARGE_IN): "INTERRUPTING",
    ("AWAITING_CONFIRMATION", E.AUDIO_FIRST_CHUNK): "SPEAKING",
    ("AWAITING_CONFIRMATION", E.CONFIRMED): "TOOL_RUNNING",
    ("AWAITING_CONFIRMATION", E.DECLINED): "THINKING",
    ("AWAITING_CONFIRMATION", E.RESPONSE_COMPLETED): "LISTENING",
    ("AWAITING_CONFIRMATION", E.BARGE_IN): "INTERRUPTING",
    ("TOOL_RUNNING", E.TOOL_RESULT): "THINKING",
    ("TOOL_RUNNING", E.BARGE_IN): "INTERRUPTING",
    # Speaking: finish, get interrupted, or chain into a tool after a preamble.
    ("SPEAKING", E.RESPONSE_COMPLETED): "LISTENING",
    ("SPEAKING", E.BARGE_IN): "INTERRUPTING",
    ("SPEAKING", E.TOOL_INTENT): "TOOL_PENDING",
    ("SPEAKING", E.CONFIRMED): "TOOL_RUNNING",
    ("SPEAKING", E.DEPENDENCY_FAILED): "DEGRADED",
    ("INTERRUPTING", E.OUTPUT_STOPPED): "LISTENING",
    # Degraded: text mode keeps the conversation going until the dependency is back.
    ("DEGRADED", E.TURN_COMMITTED): "THINKING",
    ("DEGRADED", E.DEPENDENCY_RECOVERED): "LISTENING",
    ("DEGRADED", E.CONFIRMED): "TOOL_RUNNING",
}

for _state in STATES - TERMINAL:
    TRANSITIONS[(_state, E.CLOSE)] = "CLOSING"
    TRANSITIONS[(_state, E.FAIL)] = "FAILED"


class InvalidTransition(Exception):
    def __init__(self, state: str, event: Event) -> None:
        super().__init__(f"no transition from {state} on {event.value}")
        self.state = state
        self.event = event


class SessionMachine:
    """Current state plus the table. ``fire`` returns ``(previous, new)``."""

    def __init__(self, state: str = "CONNECTING") -> None:
        if state not in STATES:
            raise ValueError(f"unknown state {state!r}")
        self.state = state

    def can(self, event: Event) -> bool:
        return (self.state, event) in TRANSITIONS

    def fire(self, event: Event) -> tuple[str, str]:
        try:
            new = TRANSITIONS[(self.state, event)]
        except KeyError:
            raise InvalidTransition(self.state, event) from None
        previous, self.state = self.state, new
        return previous, new
