"""What the session table decides outside a caller's turn: caller audio in text mode, a dependency
lost or back, a client's speech hint with nothing live, the agent speaking unasked.

Each event's rows, transition and effects, on the bare machine (pure and fast, like
``test_machine.py``); then the session's two entry points for the composition root, on scripted
runners."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.fakes import fake_runners
from tests.support.harness import running
from vocero.inference.sim.script import Rule
from vocero.orchestrator.machine import (
    ANSWERING_STATES,
    STATES,
    TABLE,
    TERMINAL,
    Effect,
    Event,
    SessionMachine,
)

X = Effect
LIVE = [s for s in STATES if s not in TERMINAL]
IDLE_STATES = ("LISTENING", "AWAITING_CONFIRMATION", "TRANSCRIBING")
live_states = st.sampled_from(LIVE)


def step(state: str, event: Event, *, question_open: bool = False) -> tuple[str, tuple[X, ...]]:
    machine = SessionMachine(state, question_open=question_open)  # type: ignore[arg-type]
    taken = machine.process(event)
    return taken.state, taken.effects


# ----------------------------------------------------------------------- caller audio


@given(live_states, st.booleans())
def test_caller_audio_is_heard_in_every_live_state_but_text_mode(
    state: str, question_open: bool
) -> None:
    after, effects = step(state, Event.AUDIO, question_open=question_open)
    assert after == state, "a frame of audio never moves the state by itself"
    assert effects == ((X.PROBE_RECOVERY,) if state == "DEGRADED" else (X.HEAR,))


def test_caller_audio_after_the_session_ended_is_not_heard() -> None:
    for state in TERMINAL:
        assert step(state, Event.AUDIO) == (state, ())


# ----------------------------------------------------------------------- speech hint


def test_a_hint_with_nothing_live_starts_a_turn_from_an_idle_session() -> None:
    for state in ("LISTENING", "AWAITING_CONFIRMATION"):
        after, effects = step(state, Event.SPEECH_HINT_NO_OUTPUT)
        assert (after, effects) == ("TRANSCRIBING", (X.EMIT_STATE,))


def test_a_hint_with_nothing_live_stops_nothing_while_an_answer_is_prepared() -> None:
    for state in ANSWERING_STATES:
        assert step(state, Event.SPEECH_HINT_NO_OUTPUT) == (state, ())
        assert X.STOP_OUTPUT in step(state, Event.SPEECH_HINT)[1], "live: a barge-in"


@given(live_states)
def test_outside_answering_a_hint_means_the_same_live_or_not(state: str) -> None:
    if state in ANSWERING_STATES:
        return
    assert TABLE[(state, Event.SPEECH_HINT_NO_OUTPUT)] == TABLE[(state, Event.SPEECH_HINT)]


# ----------------------------------------------------------------------- dependencies


def test_a_dependency_lost_takes_an_idle_session_to_text_mode() -> None:
    for state in IDLE_STATES:
        after, effects = step(state, Event.DEPENDENCY_FAILED)
        assert after == "DEGRADED"
        assert effects == (X.RESET_LISTENING, X.OUTAGE_TAKEN, X.EMIT_STATE)


def test_a_dependency_lost_again_in_text_mode_is_taken_without_a_change() -> None:
    assert step("DEGRADED", Event.DEPENDENCY_FAILED) == ("DEGRADED", (X.OUTAGE_TAKEN,))


def test_a_busy_session_does_not_take_the_outage_yet() -> None:
    """Its reporter reports it again later (the store's next failed renewal)."""
    for state in (*ANSWERING_STATES, "INTERRUPTING"):
        assert step(state, Event.DEPENDENCY_FAILED) == (state, ())


def test_a_dependency_lost_while_configuring_starts_the_session_in_text_mode() -> None:
    """Issue 41: the table ignored it, and the session went on to listen with no store."""
    machine = SessionMachine("CONFIGURING")
    lost = machine.process(Event.DEPENDENCY_FAILED)
    assert (lost.state, lost.effects) == ("DEGRADED", (X.OUTAGE_TAKEN, X.EMIT_STATE))
    configured = machine.process(Event.CONFIGURED)
    assert (configured.state, configured.effects) == ("DEGRADED", ()), "stays in text mode"
    assert machine.process(Event.DEPENDENCY_RECOVERED).state == "LISTENING"


@given(live_states)
def test_an_outage_is_taken_exactly_when_the_session_ends_in_text_mode(state: str) -> None:
    after, effects = step(state, Event.DEPENDENCY_FAILED)
    assert (X.OUTAGE_TAKEN in effects) == (after == "DEGRADED")


def test_a_recogniser_found_down_after_an_answer_degrades_only_a_listening_session() -> None:
    after, effects = step("LISTENING", Event.STT_DOWN)
    assert after == "DEGRADED"
    assert effects == (X.REPORT_STT_DOWN, X.RESET_LISTENING, X.EMIT_STATE), "said, then shown"
    for state in LIVE:
        if state != "LISTENING":
            assert step(state, Event.STT_DOWN) == (state, ()), state


@given(live_states)
def test_recovery_ends_text_mode_and_nothing_else(state: str) -> None:
    after, effects = step(state, Event.DEPENDENCY_RECOVERED)
    if state == "DEGRADED":
        assert (after, effects) == ("LISTENING", (X.EMIT_STATE,))
    else:
        assert (after, effects) == (state, ())


def test_text_mode_trace_audio_probes_until_the_recogniser_is_back() -> None:
    machine = SessionMachine("LISTENING")
    machine.process(Event.STT_DOWN)
    assert machine.process(Event.AUDIO).effects == (X.PROBE_RECOVERY,)
    typed = machine.process(Event.TURN_COMMITTED)  # typed turns are still served
    assert (typed.state, X.RESPOND in typed.effects) == ("THINKING", True)
    assert machine.process(Event.AUDIO).effects == (X.HEAR,), "answering: barge-in is heard"
    assert machine.process(Event.RESPONSE_COMPLETED).state == "LISTENING"
    assert machine.process(Event.STT_DOWN).state == "DEGRADED"  # still down once it settled
    assert machine.process(Event.DEPENDENCY_RECOVERED).state == "LISTENING"
    assert machine.process(Event.AUDIO).effects == (X.HEAR,)


# ----------------------------------------------------------------------- speaking unasked


def test_an_expired_question_queues_the_agents_turn_only_from_a_listening_session() -> None:
    assert step("LISTENING", Event.QUESTION_EXPIRED) == ("LISTENING", (X.QUEUE_UNASKED,))
    for state in LIVE:
        if state != "LISTENING":
            assert step(state, Event.QUESTION_EXPIRED) == (state, ()), state


def test_the_unasked_turn_is_spoken_when_it_comes_up_in_a_listening_session() -> None:
    after, effects = step("LISTENING", Event.QUESTION_UNANSWERED)
    assert (after, effects) == ("TOOL_RUNNING", (X.SPEAK_UNASKED, X.EMIT_STATE))


def test_a_server_question_that_runs_out_while_idle_lets_the_agent_speak() -> None:
    machine = SessionMachine("TOOL_RUNNING")
    machine.process(Event.INPUT_REQUESTED)
    machine.process(Event.AUDIO_FIRST_CHUNK)
    assert machine.process(Event.RESPONSE_COMPLETED).state == "AWAITING_CONFIRMATION"
    assert machine.process(Event.QUESTION_CLOSED).state == "LISTENING"
    assert machine.process(Event.QUESTION_EXPIRED).effects == (X.QUEUE_UNASKED,)
    spoken = machine.process(Event.QUESTION_UNANSWERED)
    assert (spoken.state, X.SPEAK_UNASKED in spoken.effects) == ("TOOL_RUNNING", True)


def test_a_caller_who_speaks_before_the_unasked_turn_comes_up_keeps_the_floor() -> None:
    machine = SessionMachine("LISTENING")
    assert machine.process(Event.QUESTION_EXPIRED).effects == (X.QUEUE_UNASKED,)
    machine.process(Event.SPEECH_STARTED)
    held = machine.process(Event.QUESTION_UNANSWERED)
    assert (held.state, held.effects) == ("TRANSCRIBING", ())


# ----------------------------------------------------------------------- the session's doors

RULES = [Rule(match=".*", reply="I can help with orders.")]


@pytest.mark.anyio
async def test_the_store_lost_and_back_through_the_session() -> None:
    """What the composition root calls on a store outage: taken once idle, then ended."""
    runners, stt, llm, _ = fake_runners(rules=RULES)
    llm.hang_calls = 1
    async with running(runners) as h:
        session = h.session
        session.on_text("hello")
        await h.until(lambda: session.state_name == "THINKING")
        assert not session.dependency_failed(), "busy: not taken yet"
        assert session.state_name == "THINKING"
        await h.advance(2.0)  # the hung model times out; the retry answers
        await h.until_frame("ResponseCompleted")
        await h.until(lambda: session.state_name == "LISTENING")
        assert session.dependency_failed() and session.state_name == "DEGRADED"
        assert session.dependency_failed(), "already in text mode: taken"
        stt.health = "unavailable"
        session.dependency_recovered()
        assert session.state_name == "DEGRADED", "the recogniser is still down"
        stt.health = "ready"
        session.dependency_recovered()
        assert session.state_name == "LISTENING"
        await h.until(lambda: [p.state for p in h.received.of("StateChanged")][-3:]
                      == ["LISTENING", "DEGRADED", "LISTENING"])  # fmt: skip
        assert session.state_name == session.machine.state
