"""Property-based replay of interruption traces against the real orchestrator.

Hypothesis generates traces that interleave typed and spoken turns, speech starts, playout
reports, cancel requests, confirmations, a slow consumer and a disconnect; each trace is replayed
on the simulated runners and the protocol invariants are checked on what the client received.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.audio import silence_frames, tone_frames
from tests.support.fakes import fake_runners
from tests.support.harness import Harness, profile, running
from vocero.inference.sim.script import Rule
from vocero.orchestrator.machine import IDLE, STATES, TABLE

RULES = [
    Rule(
        match="story",
        reply="Once upon a time there was a story. It had two sentences, "
        "and a clause that runs on for a little while longer.",
    ),
    Rule(match="what did you say", reply="I said: {last_assistant}"),
    Rule(match=".*", reply="I can help with orders."),
]

ACTIONS = st.one_of(
    st.tuples(st.just("text"), st.sampled_from(["tell me a story", "what did you say", "hi"])),
    st.tuples(st.just("hint"), st.none()),
    st.tuples(st.just("speech"), st.sampled_from([60, 120, 300, 500])),
    st.tuples(st.just("playout"), st.floats(min_value=0.0, max_value=1.2)),
    st.tuples(st.just("cancel"), st.booleans()),
    st.tuples(st.just("confirm"), st.integers(min_value=0, max_value=3)),
    st.tuples(st.just("pause"), st.booleans()),
    st.tuples(st.just("settle"), st.none()),
)


class PausableHarness:
    """Wraps the consumer so a trace can play a slow client that stops reading."""

    def __init__(self, h: Harness) -> None:
        self.h = h
        self.resume = anyio.Event()
        self.resume.set()


async def apply(h: Harness, gate: PausableHarness, action: str, arg: Any) -> None:
    session = h.session
    current = session.generations.current
    if action == "text":
        session.on_text(arg)
    elif action == "hint":
        session.on_speech_hint()
    elif action == "speech":
        for frame in tone_frames(arg) + silence_frames(500):
            session.on_audio(frame)
    elif action == "playout" and current is not None:
        sent = h.out.playout_of(current.generation_id).sent_ms
        session.on_playout(current.generation_id, int(sent * arg))
    elif action == "cancel":
        session.on_cancel(current.generation_id if current and arg else "gen_unknown")
    elif action == "confirm":
        session.on_confirmation("prop_x", arg, "confirm")
    elif action == "pause":
        h.auto_ack = not arg
    await anyio.wait_all_tasks_blocked()


def check_invariants(h: Harness) -> None:
    frames = h.received.frames
    stopped: set[str] = set()
    created: list[str] = []
    completed: dict[str, Any] = {}
    texts: dict[str, list[str]] = {}
    played_reported: set[str] = set(h.reported)
    state = "CONFIGURING"
    for name, payload in frames:
        gen = getattr(payload, "generation_id", "")
        if name in ("AudioOut", "TextDelta"):
            assert gen not in stopped, f"{name} of {gen} after its stop_and_flush"
            assert gen not in completed, f"{name} of {gen} after its completion"
        if name == "TextDelta":
            texts.setdefault(gen, []).append(payload.text)
        if name == "StopAndFlush":
            stopped.add(gen)
        if name == "ResponseCreated":
            created.append(gen)
        if name == "ResponseCompleted":
            assert gen not in completed, f"second completion for {gen}"
            completed[gen] = payload
        if name == "StateChanged":
            assert payload.state in STATES
            assert payload.previous == state
            targets = {r.target for k, r in TABLE.items() if k[0] == state}
            idle = {"LISTENING", "AWAITING_CONFIRMATION"} if IDLE in targets else set()
            assert payload.state in targets | idle, f"{state} -> {payload.state} not in the table"
            state = payload.state
    assert set(completed) == set(created), "every generation completes exactly once"
    for gen, done in completed.items():
        said = "".join(texts.get(gen, []))
        assert said.startswith(done.heard_text), "heard_text is a prefix of what was generated"
        if done.status in ("interrupted", "canceled") and gen not in played_reported:
            assert done.heard_text == "", "nothing beyond what playout acknowledged"
    heard = [d.heard_text for d in completed.values() if d.heard_text]
    for message in h.session.history:
        if message.role == "assistant":
            assert message.content in heard, "history holds heard text only"
    assert not h.out.has_control(), "control events are never lost"


async def replay(trace: list[tuple[str, Any]]) -> None:
    runners, *_ = fake_runners(
        stt=["tell me a story", "hi", "what did you say"] * 4, rules=RULES, ms_per_char=4
    )
    async with running(runners, prof=profile(min_interruption_ms=200)) as h:
        h.reported = []  # type: ignore[attr-defined]
        original = h.session.on_playout

        def tracked(generation_id: str, played_ms: int) -> None:
            if played_ms > 0:
                h.reported.append(generation_id)  # type: ignore[attr-defined]
            original(generation_id, played_ms)

        h.session.on_playout = tracked  # type: ignore[method-assign]
        gate = PausableHarness(h)
        for action, arg in trace:
            await apply(h, gate, action, arg)
        h.auto_ack = True
        for gen in list(h.session.generations.ids()):
            tracked(gen, 10**7)
        await h.until(lambda: h.session.generations.live() is None, timeout=10)
        await anyio.wait_all_tasks_blocked()
        h.session.close("disconnect")
        await h.until(lambda: not h.out.has_control(), timeout=5)
        await anyio.wait_all_tasks_blocked()
        check_invariants(h)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ACTIONS, min_size=1, max_size=14))
def test_interruption_traces_keep_protocol_invariants(trace: list[tuple[str, Any]]) -> None:
    started = time.monotonic()
    anyio.run(replay, trace)
    assert time.monotonic() - started < 30
