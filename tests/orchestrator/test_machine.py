"""The session machine, property-tested like h2's state machines: every (state, event) pair is
either a transition of the table or a typed error, and the table itself says what it means."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vocero.orchestrator.machine import (
    ANSWERING,
    ANSWERING_STATES,
    IDLE,
    STATES,
    TABLE,
    TERMINAL,
    Effect,
    Event,
    InvalidTransition,
    SessionMachine,
    routing_event,
)

states = st.sampled_from(STATES)
events = st.sampled_from(list(Event))


@given(states, events, st.booleans())
def test_every_pair_is_a_transition_or_a_typed_error(
    state: str, event: Event, question_open: bool
) -> None:
    machine = SessionMachine(state, question_open=question_open)  # type: ignore[arg-type]
    if (state, event) not in TABLE:
        with pytest.raises(InvalidTransition) as raised:
            machine.process(event)
        assert (raised.value.state, raised.value.event) == (state, event)
        assert machine.state == state, "a refused event changes nothing"
        return
    step = machine.process(event)
    assert step.previous == state
    assert step.state in STATES
    assert machine.state == step.state
    assert (Effect.EMIT_STATE in step.effects) == step.changed
    assert Effect.TAKE_TURN not in step.effects, "the machine resolves how a turn is taken"
    if Effect.STOP_OUTPUT in step.effects and step.changed:
        assert step.effects.index(Effect.STOP_OUTPUT) < step.effects.index(Effect.EMIT_STATE)


@given(events)
def test_closing_and_failed_ignore_everything(event: Event) -> None:
    for state in TERMINAL:
        step = SessionMachine(state).process(event)
        assert step.state == state and step.effects == ()


@given(states, st.booleans())
def test_idle_means_waiting_on_the_open_question_or_listening(
    state: str, question_open: bool
) -> None:
    for (source, event), rule in TABLE.items():
        if source != state or rule.target != IDLE:
            continue
        machine = SessionMachine(state, question_open=question_open)  # type: ignore[arg-type]
        expected = "AWAITING_CONFIRMATION" if question_open else "LISTENING"
        assert machine.process(event).state == expected


@given(st.booleans())
def test_a_committed_turn_is_classified_only_while_a_question_is_open(open_: bool) -> None:
    for state in ("LISTENING", "AWAITING_CONFIRMATION", "TRANSCRIBING", "DEGRADED"):
        step = SessionMachine(state, question_open=open_).process(Event.TURN_COMMITTED)
        assert step.state == "THINKING"
        wanted = Effect.CLASSIFY_ANSWER if open_ else Effect.RESPOND
        assert wanted in step.effects


@given(st.sampled_from(["confirm", "reject", "uncertain", "new_request"]))
def test_only_confirm_reject_and_uncertain_answer_the_question(intent: str) -> None:
    step = SessionMachine("THINKING", question_open=True).process(routing_event(intent))
    if intent == "new_request":
        assert step.effects == (Effect.RESPOND,)
    else:
        assert step.effects == (Effect.SUBMIT_ANSWER,)


def test_answering_is_derived_from_the_barge_in_rows() -> None:
    assert frozenset(ANSWERING_STATES) == ANSWERING
    for state in STATES:
        rule = TABLE.get((state, Event.BARGE_IN))
        stops = rule is not None and Effect.STOP_OUTPUT in rule.effects
        assert stops == (state in ANSWERING)


def test_the_question_opens_on_a_sensitive_action_and_closes_on_its_answer() -> None:
    machine = SessionMachine("THINKING")
    for event in (Event.TOOL_INTENT, Event.SENSITIVE_ACTION):
        machine.process(event)
    assert machine.question_open and machine.state == "TOOL_PENDING"
    machine.process(Event.AUDIO_FIRST_CHUNK)
    assert machine.process(Event.RESPONSE_COMPLETED).state == "AWAITING_CONFIRMATION"
    machine.process(Event.SPEECH_STARTED)
    assert machine.process(Event.TURN_COMMITTED).effects[0] is Effect.CLASSIFY_ANSWER
    machine.process(Event.ANSWER)
    assert machine.process(Event.CONFIRMED).state == "TOOL_RUNNING"
    assert not machine.question_open
    assert machine.process(Event.TOOL_RESULT).state == "THINKING"


def test_interrupting_lasts_until_the_output_has_stopped() -> None:
    machine = SessionMachine("SPEAKING")
    step = machine.process(Event.INTERRUPTION)
    assert step.state == "INTERRUPTING" and step.effects[0] is Effect.STOP_OUTPUT
    for late in (Event.AUDIO_FIRST_CHUNK, Event.BARGE_IN, Event.SPEECH_STARTED):
        assert machine.process(late).state == "INTERRUPTING"
    with pytest.raises(InvalidTransition):
        machine.process(Event.TURN_COMMITTED)
    assert machine.process(Event.OUTPUT_STOPPED).state == "LISTENING"


def test_a_read_back_cut_short_by_a_barge_in_leaves_the_question_open() -> None:
    machine = SessionMachine("SPEAKING", question_open=True)
    machine.process(Event.BARGE_IN)
    assert machine.process(Event.OUTPUT_STOPPED).state == "AWAITING_CONFIRMATION"
    assert machine.process(Event.QUESTION_CLOSED).state == "LISTENING"


def test_an_unanswered_question_lets_the_agent_speak_only_from_an_idle_session() -> None:
    """A server's question that ran out: from LISTENING the agent takes the turn (the call is
    ending), anywhere else the caller's turn or the answer in progress keeps the floor."""
    machine = SessionMachine("LISTENING")
    step = machine.process(Event.QUESTION_UNANSWERED)
    assert (step.state, step.changed) == ("TOOL_RUNNING", True)
    assert machine.process(Event.TOOL_RESULT).state == "THINKING"
    assert machine.process(Event.AUDIO_FIRST_CHUNK).state == "SPEAKING"
    assert machine.process(Event.SPEECH_HINT).state == "INTERRUPTING"  # the caller cuts in
    for state in STATES:
        if state in ("LISTENING", *TERMINAL):
            continue
        held = SessionMachine(state).process(Event.QUESTION_UNANSWERED)
        assert (held.state, held.effects) == (state, ()), state
