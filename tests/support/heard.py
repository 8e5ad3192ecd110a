"""A long answer interrupted mid-unit, the way a client that plays it would report it: what the
caller was said to have heard (issue #25, item 1)."""

from __future__ import annotations

from tests.support.harness import running
from vocero.inference.runner_set import RunnerSet
from vocero.inference.sim.script import Rule

LONG = (
    "The harbour master was a patient woman who counted every ship that came in, "
    "and wrote each name down."
)
MS_PER_CHAR = 50.0
"""101 characters: 5,050 ms of audio, sent 100 ms a chunk, at most 400 ms ahead of playout."""


def played_share(text: str, played_ms: float, total_ms: float) -> int:
    """Characters of ``text`` whose time (spread evenly) ended by ``played_ms``."""
    return int(len(text) * min(1.0, played_ms / total_ms))


RULES = [Rule(match="harbour", reply=LONG)]


async def heard_after(runners: RunnerSet, played_ms: int, *, turns: int = 1) -> tuple[str, str]:
    """Ask for the long answer ``turns`` times; interrupt the last after ``played_ms`` of
    playout. The earlier answers play to their end. Returns (heard, generation id)."""
    async with running(runners) as h:
        for turn in range(1, turns):
            h.session.on_text("tell me about the harbour")
            await h.until_frame("ResponseCompleted", turn, timeout=30)
        h.auto_ack = False
        h.session.on_text("tell me about the harbour")
        audio = await h.until_frame("AudioOut", len(h.received.of("AudioOut")) + 1)
        generation_id = audio.generation_id
        track = h.out.playout_of(generation_id)
        played = 0
        while played < played_ms:  # a client playing it: reports trail what was sent
            await h.until(lambda: track.sent_ms >= played + 300)  # noqa: B023
            played = min(played_ms, int(track.sent_ms) - 200)
            h.session.on_playout(generation_id, played)
        await h.until(lambda: track.sent_ms >= played_ms + 300)
        h.session.on_speech_hint()
        done = await h.until_frame("ResponseCompleted", turns)
        assert done.status == "interrupted"
        assert h.session.history[-1].content == done.heard_text or not done.heard_text
        return done.heard_text, generation_id
