"""The prepared answer's part of ``vocero bench ttfs`` (ADR-0037, issue 45 item 5).

* **commit → first audio**, for complete requests: from the moment the session committed the
  turn (its ``turn_endpointing_ms`` observation) to the first playable audio frame of the
  answer, per half (the clips' ``ttfs_ms`` less their ``commit_after_last_word_ms``, both from
  the end of the caller's last word) and for the spoken requests (the server's own
  ``ttfs_ms``: endpoint detected → first audio);
* **what the drafts cost**: drafts made, used and dropped (by reason), the model calls and
  syntheses they made, per committed turn, and the process's CPU seconds over the sessions
  (model threads included), so a run without drafts (``--drafts off``) gives the difference.

``--drafts both`` runs the bench twice on the same clips, with and then without the prepared
answer, and reports the second run's figures beside the first (``without_prepared_answer``).
Every half is reported on its own; nothing here chooses a threshold.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from vocero.bench.halves import PausedTurn
from vocero.bench.stats import percentiles
from vocero.orchestrator.drafts import DraftCounts
from vocero.orchestrator.session import Session

DRAFTS = ("on", "off", "both")


def commit_to_audio(complete: list[PausedTurn]) -> dict[str, Any]:
    """Commit → first audio of the complete clips that were answered."""
    return percentiles([
        c.ttfs_ms - c.commit_after_last_word_ms
        for c in complete
        if c.ttfs_ms is not None and c.commit_after_last_word_ms is not None
    ])


@dataclass
class DraftTally:
    """The drafts of every session of one bench run, added up."""

    counts: DraftCounts = field(default_factory=DraftCounts)
    sessions: int = 0
    turns: int = 0
    started_cpu_s: float = field(default_factory=time.process_time)

    def add(self, session: Session) -> None:
        self.sessions += 1
        self.turns += sum(1 for m in session.history if m.role == "user")
        drafts = session.drafts
        if drafts is None:
            return
        mine, theirs = self.counts, drafts.counts
        mine.made += theirs.made
        mine.used += theirs.used
        mine.dropped += theirs.dropped
        mine.llm_calls += theirs.llm_calls
        mine.syntheses += theirs.syntheses
        mine.held_audio_used += theirs.held_audio_used
        for reason, count in theirs.dropped_by.items():
            mine.dropped_by[reason] = mine.dropped_by.get(reason, 0) + count

    def report(self, enabled: bool) -> dict[str, Any]:
        turns = max(1, self.turns)
        return {
            "enabled": enabled,
            **asdict(self.counts),
            "sessions": self.sessions,
            "committed_turns": self.turns,
            "draft_llm_calls_per_turn": round(self.counts.llm_calls / turns, 3),
            "draft_syntheses_per_turn": round(self.counts.syntheses / turns, 3),
            "process_cpu_s": round(time.process_time() - self.started_cpu_s, 2),
            "note": "process_cpu_s: the bench process over every session of the run, model "
            "threads included; compare with the run without drafts",
        }


def compared(with_drafts: dict[str, Any], without: dict[str, Any]) -> dict[str, Any]:
    """The first run's report, with the second run's figures (no drafts) beside it."""
    with_drafts["without_prepared_answer"] = {
        "prepared_answer": without.get("prepared_answer"),
        "ttfs_ms": without.get("ttfs_ms"),
        "stages_ms": without.get("stages_ms"),
        "halves": {
            half: {k: v for k, v in body.items() if k in ("summary", "commit_to_first_audio_ms")}
            for half, body in without.get("halves", {}).items()
        },
    }
    return with_drafts


async def run_both(run: Callable[[bool], Awaitable[dict[str, Any]]], drafts: str) -> dict[str, Any]:
    """``drafts``: ``on``, ``off``, or ``both`` (with, then without, on the same clips)."""
    if drafts != "both":
        return await run(drafts == "on")
    return compared(await run(True), await run(False))
