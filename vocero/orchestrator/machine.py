"""The session state machine (docs/protocol.md, "States"), sans-IO: it decides, the shell performs.

Like h11's ``_state.py``: one table of ``(state, event) -> rule`` in one file, no awaits and no
effects here. :meth:`SessionMachine.process` returns a :class:`Step` naming the effects the async
shell (:mod:`vocero.orchestrator.session`) must perform, or raises :class:`InvalidTransition` for
a pair the table does not hold. Every pair the shell may send is in the table, the deliberately
ignored ones included (a late completion after the caller closed, speech heard while the agent
is already being stopped...): the property tests in ``tests/orchestrator`` check the table whole.

Besides its state the machine holds one flag, whether a confirmation question is open (a proposal
revision the caller was asked about and has not yet answered). ``AWAITING_CONFIRMATION`` is the
idle state of an open question: its read-back has been spoken and the agent waits for the answer.
Two targets and one effect depend on the flag, and are resolved here, not in the shell:

* :data:`IDLE` is where a finished or stopped answer leaves the session: ``AWAITING_CONFIRMATION``
  while a question is open, ``LISTENING`` otherwise;
* :attr:`Effect.TAKE_TURN` is ``CLASSIFY_ANSWER`` while a question is open (is the turn an answer,
  or a new request?), ``RESPOND`` otherwise.

The shell never reads the state to decide: it reports what happened (a frame of caller audio, a
turn, a dependency lost or back, a server's question that ran out) and performs the effects of the
step. What happens outside a caller's turn is decided here too: a dependency down or back
(``DEPENDENCY_FAILED``, ``STT_DOWN``, ``DEPENDENCY_RECOVERED``; ``DEGRADED`` is text mode, where
caller audio only asks whether the recogniser is back) and the agent speaking unasked (a server's
question nobody answered: ``QUESTION_EXPIRED`` queues the agent's turn, ``QUESTION_UNANSWERED``
starts it when its turn comes).

The states are declared once, in :mod:`vocero.contracts.events` (the wire reports them).
``CONNECTING`` and ``AUTHENTICATING`` are not session states: the relay authenticates a
connection before any session exists (no ``session_id`` to report a state for); see
``docs/protocol.md``. ``FAILED`` is entered for real when a session's own work fails.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final, Literal, get_args

from vocero.contracts.events import SessionState as State

STATES: Final[tuple[State, ...]] = get_args(State)
TERMINAL: Final[frozenset[State]] = frozenset({"CLOSING", "FAILED"})


class Event(enum.StrEnum):
    CONFIGURED = "configured"
    AUDIO = "audio"
    """A frame of caller audio arrived: heard (``HEAR``), except in text mode (``DEGRADED``),
    where it only asks whether the recogniser is back (``PROBE_RECOVERY``)."""
    SPEECH_STARTED = "speech_started"
    """Server VAD heard the caller begin (while answering: a possible barge-in, judged later)."""
    SPEECH_HINT = "speech_hint"
    """The client's VAD says the caller began while a generation is live: while answering,
    that is a barge-in at once."""
    SPEECH_HINT_NO_OUTPUT = "speech_hint_no_output"
    """The client's VAD says the caller began while no generation is live: a turn of its own
    from an idle session; while an answer is still being prepared there is nothing to stop yet
    (the speech will be a turn of its own)."""
    INTERRUPTION = "interruption"
    """Caller speech long enough (and not a backchannel) to take the turn."""
    BARGE_IN = "barge_in"
    """Anything else that takes the turn from the agent: a typed turn, a click, a cancel."""
    OUTPUT_STOPPED = "output_stopped"
    FALSE_INTERRUPTION = "false_interruption"
    """The speech that stopped the answer held no words (a cough, an "mm-hmm"; ADR-0038): from
    an idle session the stopped answer resumes (``RESUME_ANSWER``); anywhere else the caller has
    begun again, and that turn has the floor."""
    """The stopped generation's work has unwound: nothing of it can reach the client."""
    SPEECH_DISCARDED = "speech_discarded"
    TURN_COMMITTED = "turn_committed"
    ANSWER = "answer"
    """The turn answers the open question (confirm, reject or unclear)."""
    NEW_REQUEST = "new_request"
    """The turn asks for something (a changed value, another task): served as a new turn."""
    TOOL_INTENT = "tool_intent"
    ALLOWED = "allowed"
    SENSITIVE_ACTION = "sensitive_action"
    DENIED = "denied"
    CONFIRMED = "confirmed"
    DECLINED = "declined"
    INPUT_REQUESTED = "input_requested"
    """A server asks the caller something during a tool call: a question opens."""
    INPUT_ANSWERED = "input_answered"
    """The caller's answer to a server's question was sent (or declined): its call carries on."""
    QUESTION_CLOSED = "question_closed"
    """The open question ended without an answer that binds (expired, given up, withdrawn)."""
    QUESTION_EXPIRED = "question_expired"
    """A server's question ran out of time with nobody answering it (it has closed): from a
    listening session the agent will speak unasked (``QUEUE_UNASKED``); anywhere else the
    caller's turn, or the answer in progress, keeps the floor."""
    QUESTION_UNANSWERED = "question_unanswered"
    """The agent's unasked turn came up (queued by ``QUESTION_EXPIRED``): from a session still
    listening it takes the turn to say what became of the call (``SPEAK_UNASKED``)."""
    TOOL_RESULT = "tool_result"
    AUDIO_FIRST_CHUNK = "audio_first_chunk"
    RESPONSE_COMPLETED = "response_completed"
    DEPENDENCY_FAILED = "dependency_failed"
    """A dependency the session needs failed (the recogniser failed a turn, the store stopped
    answering): an idle session goes to text mode (``DEGRADED``) and takes the outage
    (``OUTAGE_TAKEN``); a busy one carries on, and the reporter reports it again later."""
    STT_DOWN = "stt_down"
    """After an answer settled, the recogniser reports itself unavailable (a breaker opened, an
    endpoint went away): a listening session says so and goes to text mode."""
    DEPENDENCY_RECOVERED = "dependency_recovered"
    """The recogniser (and the store) answer again: text mode ends."""
    CLOSE = "close"
    FAIL = "fail"


class Effect(enum.StrEnum):
    EMIT_STATE = "emit_state"
    """Tell the client (``session.state.v1``) and the store; added whenever the state changes."""
    STOP_OUTPUT = "stop_output"
    """Flush the client, cancel the current generation, complete it as heard."""
    WATCH_INTERRUPTION = "watch_interruption"
    """Speech while answering: judge it once it is long enough (barge-in or backchannel)."""
    TAKE_TURN = "take_turn"
    """Resolved by the machine into ``CLASSIFY_ANSWER`` or ``RESPOND``; never returned."""
    CLASSIFY_ANSWER = "classify_answer"
    RESPOND = "respond"
    SUBMIT_ANSWER = "submit_answer"
    RESET_LISTENING = "reset_listening"
    """Drop the caller speech in progress (the recogniser is gone: text mode)."""
    HEAR = "hear"
    """Give the frame of caller audio to the listening policy."""
    PROBE_RECOVERY = "probe_recovery"
    """Text mode: ask the recogniser whether it is back, and report ``DEPENDENCY_RECOVERED``
    if it is (the frame itself is not heard)."""
    REPORT_STT_DOWN = "report_stt_down"
    """Tell the client the recogniser is unavailable (``error.v1`` ``STT_UNAVAILABLE``)."""
    OUTAGE_TAKEN = "outage_taken"
    """The session has taken a dependency's outage (it is in text mode, now or already): its
    reporter need not report this outage again."""
    QUEUE_UNASKED = "queue_unasked"
    """Queue the agent's unasked turn behind any caller turn; it comes up as
    ``QUESTION_UNANSWERED``."""
    SPEAK_UNASKED = "speak_unasked"
    RESUME_ANSWER = "resume_answer"
    """Say the unheard rest of the answer a false interruption stopped (ADR-0038)."""
    """The agent speaks without a caller turn: what became of the call whose server's question
    nobody answered."""


Intent = Literal["confirm", "reject", "uncertain", "new_request"]
"""How a turn relates to the open question, as the model classified it."""
ANSWERS: Final[frozenset[str]] = frozenset({"confirm", "reject", "uncertain"})
"""The intents that answer the open question; anything else is a new request (docs/protocol.md
"Answers and new requests")."""


def routing_event(intent: str) -> Event:
    """A classified turn while a question is open: an answer, or a new request."""
    return Event.ANSWER if intent in ANSWERS else Event.NEW_REQUEST


IDLE: Final = "IDLE"
"""Pseudo-target: ``AWAITING_CONFIRMATION`` while a question is open, else ``LISTENING``."""

Target = State | Literal["IDLE"] | None


@dataclass(frozen=True, slots=True)
class Rule:
    target: Target
    """The next state; ``None`` stays (the event is deliberately ignored, or effect-only)."""
    effects: tuple[Effect, ...] = ()


@dataclass(frozen=True, slots=True)
class Step:
    previous: State
    state: State
    effects: tuple[Effect, ...]

    @property
    def changed(self) -> bool:
        return self.previous != self.state


class InvalidTransition(Exception):
    """The shell sent an event the table does not allow in the current state: a bug."""

    def __init__(self, state: State, event: Event) -> None:
        super().__init__(f"no transition from {state} on {event.value}")
        self.state = state
        self.event = event


E = Event
X = Effect
STAY: Final = Rule(None)

ANSWERING_STATES: Final[tuple[State, ...]] = (
    "THINKING",
    "TOOL_PENDING",
    "TOOL_RUNNING",
    "SPEAKING",
)
"""Where the agent holds the turn; the shell sends barge-in events only while a generation is
live, and the table says what they do."""

TABLE: dict[tuple[State, Event], Rule] = {
    ("CONFIGURING", E.CONFIGURED): Rule("LISTENING"),
    # A dependency lost before the session listens (the store stopped answering while it was
    # being set up): it starts in text mode, like an idle session would go there, and the
    # configuration that finishes meanwhile leaves it there until the dependency is back.
    ("CONFIGURING", E.DEPENDENCY_FAILED): Rule("DEGRADED", (X.OUTAGE_TAKEN,)),
    ("DEGRADED", E.CONFIGURED): STAY,
    # Idle, with or without an open question: the caller speaks, types, clicks.
    ("LISTENING", E.SPEECH_STARTED): Rule("TRANSCRIBING"),
    ("LISTENING", E.SPEECH_HINT): Rule("TRANSCRIBING"),
    ("LISTENING", E.TURN_COMMITTED): Rule("THINKING", (X.TAKE_TURN,)),
    ("LISTENING", E.SPEECH_HINT_NO_OUTPUT): Rule("TRANSCRIBING"),
    ("LISTENING", E.DEPENDENCY_FAILED): Rule("DEGRADED", (X.RESET_LISTENING, X.OUTAGE_TAKEN)),
    # Only a listening session learns, when an answer settles, that its recogniser is gone.
    ("LISTENING", E.STT_DOWN): Rule("DEGRADED", (X.REPORT_STT_DOWN, X.RESET_LISTENING)),
    # The agent speaks unasked: a server's question went unanswered, its call is ending. The
    # turn is queued behind any caller turn, and taken only if the session still listens then.
    ("LISTENING", E.QUESTION_EXPIRED): Rule(None, (X.QUEUE_UNASKED,)),
    ("LISTENING", E.QUESTION_UNANSWERED): Rule("TOOL_RUNNING", (X.SPEAK_UNASKED,)),
    ("AWAITING_CONFIRMATION", E.SPEECH_STARTED): Rule("TRANSCRIBING"),
    ("AWAITING_CONFIRMATION", E.SPEECH_HINT): Rule("TRANSCRIBING"),
    ("AWAITING_CONFIRMATION", E.SPEECH_HINT_NO_OUTPUT): Rule("TRANSCRIBING"),
    ("AWAITING_CONFIRMATION", E.TURN_COMMITTED): Rule("THINKING", (X.TAKE_TURN,)),
    ("AWAITING_CONFIRMATION", E.QUESTION_CLOSED): Rule("LISTENING"),
    ("LISTENING", E.FALSE_INTERRUPTION): Rule("THINKING", (X.RESUME_ANSWER,)),
    ("AWAITING_CONFIRMATION", E.FALSE_INTERRUPTION): Rule("THINKING", (X.RESUME_ANSWER,)),
    ("AWAITING_CONFIRMATION", E.DEPENDENCY_FAILED): Rule(
        "DEGRADED", (X.RESET_LISTENING, X.OUTAGE_TAKEN)
    ),
    ("TRANSCRIBING", E.TURN_COMMITTED): Rule("THINKING", (X.TAKE_TURN,)),
    ("TRANSCRIBING", E.SPEECH_DISCARDED): Rule(IDLE),
    ("TRANSCRIBING", E.DEPENDENCY_FAILED): Rule("DEGRADED", (X.RESET_LISTENING, X.OUTAGE_TAKEN)),
    # Text mode: typed turns are served; caller audio only asks whether the recogniser is back.
    ("DEGRADED", E.AUDIO): Rule(None, (X.PROBE_RECOVERY,)),
    ("DEGRADED", E.TURN_COMMITTED): Rule("THINKING", (X.TAKE_TURN,)),
    ("DEGRADED", E.DEPENDENCY_FAILED): Rule(None, (X.OUTAGE_TAKEN,)),
    ("DEGRADED", E.DEPENDENCY_RECOVERED): Rule("LISTENING"),
    # Thinking: the turn is routed (an answer to the open question, or a request), the model
    # answers or asks for a tool.
    ("THINKING", E.ANSWER): Rule(None, (X.SUBMIT_ANSWER,)),
    ("THINKING", E.NEW_REQUEST): Rule(None, (X.RESPOND,)),
    ("THINKING", E.INPUT_ANSWERED): Rule("TOOL_RUNNING"),
    ("THINKING", E.TOOL_INTENT): Rule("TOOL_PENDING"),
    ("THINKING", E.AUDIO_FIRST_CHUNK): Rule("SPEAKING"),
    ("THINKING", E.RESPONSE_COMPLETED): Rule(IDLE),
    # The gate decides: run, open a question (its read-back is spoken next), or deny.
    ("TOOL_PENDING", E.ALLOWED): Rule("TOOL_RUNNING"),
    ("TOOL_PENDING", E.SENSITIVE_ACTION): Rule(None),
    ("TOOL_PENDING", E.DENIED): Rule("THINKING"),
    ("TOOL_PENDING", E.AUDIO_FIRST_CHUNK): Rule("SPEAKING"),
    ("TOOL_PENDING", E.RESPONSE_COMPLETED): Rule(IDLE),
    ("TOOL_RUNNING", E.ALLOWED): STAY,
    ("TOOL_RUNNING", E.TOOL_RESULT): Rule("THINKING"),
    ("TOOL_RUNNING", E.AUDIO_FIRST_CHUNK): Rule("SPEAKING"),
    ("TOOL_RUNNING", E.RESPONSE_COMPLETED): Rule(IDLE),
    # Speaking: finish (waiting on the open question, if any) or chain into a tool.
    ("SPEAKING", E.RESPONSE_COMPLETED): Rule(IDLE),
    ("SPEAKING", E.TOOL_INTENT): Rule("TOOL_PENDING"),
    # Every unit's first audio is reported; only the first of an answer moves the state.
    ("SPEAKING", E.AUDIO_FIRST_CHUNK): STAY,
    ("INTERRUPTING", E.AUDIO_FIRST_CHUNK): STAY,
    # Interrupting lasts until the stopped generation has unwound.
    ("INTERRUPTING", E.OUTPUT_STOPPED): Rule(IDLE),
}

# An answer binds, or is declined, from a spoken turn (THINKING) or a click in any idle state.
for _s in ("LISTENING", "AWAITING_CONFIRMATION", "TRANSCRIBING", "THINKING", "DEGRADED"):
    TABLE[(_s, E.CONFIRMED)] = Rule("TOOL_RUNNING")
    TABLE[(_s, E.DECLINED)] = Rule("THINKING")

# While the agent holds the turn: caller speech is watched, a barge-in stops the output.
for _s in ANSWERING_STATES:
    TABLE[(_s, E.SPEECH_STARTED)] = Rule(None, (X.WATCH_INTERRUPTION,))
    for _e in (E.SPEECH_HINT, E.INTERRUPTION, E.BARGE_IN):
        TABLE[(_s, _e)] = Rule("INTERRUPTING", (X.STOP_OUTPUT,))

# A server's question may come at any moment of a tool call: only the flag changes. Caller
# audio is heard in every live state but text mode.
for _s in STATES:
    if _s not in TERMINAL:
        TABLE[(_s, E.INPUT_REQUESTED)] = STAY
        TABLE.setdefault((_s, E.AUDIO), Rule(None, (X.HEAR,)))

# Every live state closes (stopping any output first) or fails.
for _s in STATES:
    if _s not in TERMINAL:
        TABLE[(_s, E.CLOSE)] = Rule("CLOSING", (X.STOP_OUTPUT,))
        TABLE[(_s, E.FAIL)] = Rule("FAILED", (X.STOP_OUTPUT,))

_IDLE_STATES: frozenset[State] = frozenset(
    {"LISTENING", "AWAITING_CONFIRMATION", "TRANSCRIBING", "DEGRADED"}
)
_BUSY: frozenset[State] = frozenset({*ANSWERING_STATES, "INTERRUPTING"})
IGNORED: dict[Event, frozenset[State]] = {
    # Speech that cannot start a turn now: already transcribing, being stopped, text mode.
    E.SPEECH_STARTED: frozenset({"TRANSCRIBING", "INTERRUPTING", "DEGRADED", "CONFIGURING"}),
    E.SPEECH_HINT: frozenset({"TRANSCRIBING", "INTERRUPTING", "DEGRADED", "CONFIGURING"}),
    # ... and, with no generation live, while an answer is still being prepared.
    E.SPEECH_HINT_NO_OUTPUT: frozenset(
        {"TRANSCRIBING", "INTERRUPTING", "DEGRADED", "CONFIGURING", *ANSWERING_STATES}
    ),
    # A barge-in judgement that lands once the agent has already stopped.
    E.INTERRUPTION: _IDLE_STATES | {"INTERRUPTING"},
    E.BARGE_IN: _IDLE_STATES | {"INTERRUPTING"},
    # An utterance ends without a turn while the agent was answering (a blip, a backchannel).
    E.SPEECH_DISCARDED: (_IDLE_STATES - {"TRANSCRIBING"}) | _BUSY,
    # The question ends while the session is busy: only the flag changes.
    E.QUESTION_CLOSED: frozenset(STATES) - {"AWAITING_CONFIRMATION"} - TERMINAL,
    # The caller is speaking, or a turn is being answered: that turn has the floor (the call's
    # failure is in the history the model sees).
    E.QUESTION_EXPIRED: frozenset(STATES) - {"LISTENING"} - TERMINAL,
    E.QUESTION_UNANSWERED: frozenset(STATES) - {"LISTENING"} - TERMINAL,
    # A dependency failure noticed while answering is acted on once the answer is over (its
    # reporter reports it again; the recogniser is asked again when the answer settles).
    E.DEPENDENCY_FAILED: _BUSY,
    E.STT_DOWN: frozenset(STATES) - {"LISTENING"} - TERMINAL,
    E.DEPENDENCY_RECOVERED: frozenset(STATES) - {"DEGRADED"} - TERMINAL,
    # A false interruption resumes only from an idle session: elsewhere the caller spoke again.
    E.FALSE_INTERRUPTION: frozenset(STATES) - {"LISTENING", "AWAITING_CONFIRMATION"} - TERMINAL,
}
for _e, _states in IGNORED.items():
    for _i in _states:
        TABLE.setdefault((_i, _e), STAY)
# Once closing or failed, whatever still reports (a late completion, a tool result) is ignored.
for _s in TERMINAL:
    for _e in Event:
        TABLE.setdefault((_s, _e), STAY)

QUESTION_OPENS: Final = frozenset({E.SENSITIVE_ACTION, E.INPUT_REQUESTED})
QUESTION_ENDS: Final = frozenset(
    {E.CONFIRMED, E.DECLINED, E.INPUT_ANSWERED, E.QUESTION_CLOSED, E.CLOSE, E.FAIL}
)

ANSWERING: Final[frozenset[State]] = frozenset(
    s for s in STATES if X.STOP_OUTPUT in TABLE.get((s, E.BARGE_IN), STAY).effects
)
"""States in which a barge-in stops output, derived from the table."""


class SessionMachine:
    """The current state, whether a question is open, and the table."""

    def __init__(self, state: State = "CONFIGURING", *, question_open: bool = False) -> None:
        if state not in STATES:
            raise ValueError(f"unknown state {state!r}")
        self.state: State = state
        self.question_open = question_open

    def process(self, event: Event) -> Step:
        previous = self.state
        try:
            rule = TABLE[(previous, event)]
        except KeyError:
            raise InvalidTransition(previous, event) from None
        if event in QUESTION_OPENS:
            self.question_open = True
        elif event in QUESTION_ENDS:
            self.question_open = False
        target = rule.target
        if target == IDLE:
            target = "AWAITING_CONFIRMATION" if self.question_open else "LISTENING"
        if target is not None:
            self.state = target
        effects = tuple(self._resolve(e) for e in rule.effects)
        if self.state != previous:  # after a stop: the client hears the flush first
            effects = (*effects, X.EMIT_STATE)
        return Step(previous, self.state, effects)

    def _resolve(self, effect: Effect) -> Effect:
        if effect is X.TAKE_TURN:
            return X.CLASSIFY_ANSWER if self.question_open else X.RESPOND
        return effect
