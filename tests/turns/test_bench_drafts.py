"""``vocero bench ttfs``'s prepared-answer figures (ADR-0037): commit → first audio, what the
drafts cost, and the run without them beside the run with them."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.fakes import fake_runners
from tests.support.harness import running
from vocero.bench.halves import PausedTurn
from vocero.bench.ttfs_drafts import DraftTally, commit_to_audio, run_both
from vocero.orchestrator.drafts import RecoverySettings

pytestmark = pytest.mark.anyio


def test_commit_to_first_audio_is_the_answer_after_the_commit_of_answered_clips() -> None:
    clips = [
        PausedTurn("a", "a", commit_after_last_word_ms=400.0, ttfs_ms=450.0),
        PausedTurn("b", "b", commit_after_last_word_ms=300.0, ttfs_ms=1_300.0),
        PausedTurn("c", "c", commit_after_last_word_ms=200.0, ttfs_ms=None),  # never answered
    ]
    figures = commit_to_audio(clips)
    assert (figures["n"], figures["max"], figures["mean"]) == (2, 1_000.0, 525.0)


async def test_the_tally_adds_up_each_sessions_drafts_per_committed_turn() -> None:
    from tests.orchestrator.test_prepared_answers import RULES, push
    from tests.support.audio import silence_frames, tone_frames

    tally = DraftTally()
    for drafts in (True, False):
        runners, *_ = fake_runners(stt=["what are your opening hours"], rules=RULES)
        async with running(runners, recovery=RecoverySettings(drafts=drafts)) as h:
            await push(h, tone_frames(600) + silence_frames(420))
            await h.until_frame("ResponseCompleted")
            tally.add(h.session)
    report = tally.report(enabled=True)
    assert (report["sessions"], report["committed_turns"]) == (2, 2)
    assert (report["made"], report["used"], report["llm_calls"]) == (1, 1, 1)
    assert report["draft_llm_calls_per_turn"] == 0.5


async def test_both_runs_the_bench_with_then_without_drafts_and_reports_both() -> None:
    asked: list[bool] = []

    async def run(drafts: bool) -> dict[str, Any]:
        asked.append(drafts)
        return {"prepared_answer": {"enabled": drafts}, "ttfs_ms": {"p50": 1.0 if drafts else 2.0},
                "halves": {"heldout": {"summary": {"x": drafts}, "complete": [],
                                       "commit_to_first_audio_ms": {"p95": 3.0}}}}

    report = await run_both(run, "both")
    assert asked == [True, False]
    assert report["prepared_answer"] == {"enabled": True}
    without = report["without_prepared_answer"]
    assert without["ttfs_ms"] == {"p50": 2.0}
    assert without["halves"] == {"heldout": {"summary": {"x": False},
                                             "commit_to_first_audio_ms": {"p95": 3.0}}}
    asked.clear()
    assert (await run_both(run, "off"))["prepared_answer"] == {"enabled": False}
    assert asked == [False]
