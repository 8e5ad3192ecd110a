"""An answer whose playout stalls (a 2 s network stall, a frozen tab) is not delivered whole: it
ends ``interrupted`` (after ``stop_and_flush`` ``output_stalled``), its heard text as the caller's
reports say, never ``completed`` (issue 46 item 2: the impaired-network tests found a stalled
answer reported as completed with its heard text cut short)."""

from __future__ import annotations

import pytest

from tests.support.fakes import fake_runners
from tests.support.harness import Harness, running
from vocero.contracts import events as ev
from vocero.inference.sim.script import Rule

pytestmark = pytest.mark.anyio

STORY = (
    "Once upon a time there was a very long story. It went on for quite a while, "
    "with many words in it. And then, at last, it ended."
)
RULES = [Rule(match="story", reply=STORY), Rule(match=".*", reply="Hello there.")]
GRACE_S = 0.5
"""The harness's ``playout_grace_s``."""


async def stall_until_completed(h: Harness) -> ev.ResponseCompleted:
    """No report arrives any more: let virtual time run past the grace until it completes."""
    for _ in range(20):
        if h.received.of("ResponseCompleted"):
            break
        await h.advance(GRACE_S / 2)
    [done] = h.received.of("ResponseCompleted")
    return done  # type: ignore[no-any-return]


def assert_stopped_as_stalled(h: Harness, done: ev.ResponseCompleted) -> None:
    stops = [p for p in h.received.of("StopAndFlush") if p.generation_id == done.generation_id]
    assert [s.reason for s in stops] == ["output_stalled"]
    names = h.received.names()
    assert names.index("StopAndFlush") < names.index("ResponseCompleted")
    after = h.received.frames[names.index("StopAndFlush") + 1:]
    assert not [p for n, p in after if n in ("AudioOut", "TextDelta")
                and p.generation_id == done.generation_id], "nothing of it after the flush"


async def test_a_stall_mid_answer_ends_it_interrupted_as_heard_not_completed() -> None:
    runners, *_ = fake_runners(rules=RULES, ms_per_char=20)
    async with running(runners) as h:
        h.auto_ack = False
        h.session.on_text("tell me a story")
        first = await h.until_frame("AudioOut", 2)
        h.session.on_playout(first.generation_id, 300)  # then the reports stop
        done = await stall_until_completed(h)
        assert done.status == "interrupted", "a stalled answer was not heard whole"
        assert done.heard_text and STORY.startswith(done.heard_text)
        assert len(done.heard_text) < len(STORY) / 4
        assert_stopped_as_stalled(h, done)
        assert h.session.history[-1].content == done.heard_text
        generation = h.session.generations.get(done.generation_id)
        assert generation is not None and generation.status == "interrupted"


async def test_an_answer_all_sent_but_never_reported_played_is_not_completed() -> None:
    """The whole short answer left (it is within ``max_lead_ms``), and then the playout never
    moved: it was sent, not heard."""
    runners, *_ = fake_runners(rules=RULES, ms_per_char=10)
    async with running(runners) as h:
        h.auto_ack = False
        h.session.on_text("hi")
        await h.until_frame("AudioOut", 1)
        done = await stall_until_completed(h)
        assert done.status == "interrupted"
        assert done.heard_text == "", "nothing was reported played"
        assert_stopped_as_stalled(h, done)
        assert [m.role for m in h.session.history] == ["user"]


async def test_an_answer_played_to_its_end_still_completes() -> None:
    runners, *_ = fake_runners(rules=RULES, ms_per_char=10)
    async with running(runners) as h:
        h.session.on_text("hi")
        done = await h.until_frame("ResponseCompleted")
        assert (done.status, done.heard_text) == ("completed", "Hello there.")
        assert h.received.of("StopAndFlush") == []
