"""What `vocero bench ttfs` reports per half of the turn corpus (vocero/bench/halves.py)."""

from __future__ import annotations

from vocero.bench.halves import (
    HALVES,
    PausedTurn,
    agent_lines,
    complete_report,
    half_summary,
    paused_report,
)
from vocero.bench.turn_corpus import load_labels


def _turns(*afters: float | None, ttfs: tuple[float | None, ...] = ()) -> list[PausedTurn]:
    turns = [PausedTurn(f"c{i}", "text", after) for i, after in enumerate(afters)]
    for turn, value in zip(turns, ttfs, strict=False):
        turn.ttfs_ms = value
    return turns


def test_both_halves_and_the_development_set_have_a_corpus() -> None:
    assert set(HALVES) == {"tuning", "heldout", "dev"}
    assert all((path / "corpus.yaml").exists() for path in HALVES.values())
    # The development set is tuned on: none of its sentences is a held-out one.
    import yaml

    def texts(half: str) -> set[str]:
        clips = yaml.safe_load((HALVES[half] / "corpus.yaml").read_text())["clips"]
        return {clip["text"].replace(" ... ", " ").lower() for clip in clips}

    assert not texts("dev") & texts("heldout")


def test_every_development_sentence_has_the_agent_line_said_before_it() -> None:
    """``prompts.yaml`` (ADR-0025): one agent line per sentence, in the sentences' order."""
    import yaml

    dev = HALVES["dev"]
    sentences = yaml.safe_load((dev / "sentences.yaml").read_text())
    prompts = yaml.safe_load((dev / "prompts.yaml").read_text())["prompts"]
    assert [p["caller"] for p in prompts] == sentences["complete"] + sentences["paused"]
    assert all(p["said"].strip() and len(p["said"].split()) <= 25 for p in prompts)


def test_only_the_development_set_is_spoken_after_the_agent_s_lines() -> None:
    lines = {half: agent_lines(directory) for half, directory in HALVES.items()}
    dev = load_labels(HALVES["dev"]).clips
    assert all(lines["dev"].get(clip.text) for clip in dev), "every clip finds its line"
    paused = next(c for c in dev if c.kind == "paused")
    assert " ... " in paused.text and lines["dev"][paused.text]
    assert lines["tuning"] == {} and lines["heldout"] == {}


def test_a_paused_caller_committed_before_the_last_word_is_cut_off_and_not_answered() -> None:
    report = paused_report(_turns(-500.0, 300.0, 900.0, None))
    assert report["premature_cut_off_rate"] == 0.25
    assert report["premature_cut_offs"] == ["c0"]
    assert report["never_committed"] == ["c3"]
    assert report["answered_after_last_word_ms"]["n"] == 2
    assert report["answered_after_last_word_ms"]["p50"] == 900.0


def test_complete_requests_are_timed_to_the_first_audio() -> None:
    complete = _turns(250.0, 300.0, -20.0, ttfs=(450.0, 650.0, None))
    report = complete_report(complete)
    assert report["ttfs_ms"]["n"] == 2 and report["ttfs_ms"]["max"] == 650.0
    assert report["never_answered"] == ["c2"]
    assert report["cut_offs"] == ["c2"]


def test_the_summary_states_the_goals_figures() -> None:
    complete = _turns(250.0, 300.0, ttfs=(450.0, 650.0))
    summary = half_summary(complete, _turns(-10.0, 400.0, 600.0, 800.0))
    assert summary["complete_ttfs_p95_ms"] == 650.0
    assert summary["paused_cut_off_rate"] == 0.25
    assert summary["paused_answered_p50_ms"] == 600.0
    assert summary["goals"] == {
        "complete_ttfs_p95_ms": 700,
        "paused_cut_off_rate": 0.05,
        "paused_answered_p50_ms": 700,
    }
