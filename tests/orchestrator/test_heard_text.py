"""Heard text never holds a word that was not played, also while a unit is still being
synthesized and streamed in several chunks (SPEC §2; issue #25, item 1).

The defect: a ~5 s sentence paced out in 100 ms chunks, interrupted after 1.5 s of playout, was
reported heard up to "...who counted every ship that" (74 of 101 characters) because the audio
*sent so far* was taken for the unit's whole length.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.fakes import fake_runners
from tests.support.heard import LONG, MS_PER_CHAR, RULES, heard_after, played_share
from vocero.contracts.domain import VoiceRef
from vocero.contracts.ports import RunnerStatus
from vocero.inference.runner_set import RunnerSet
from vocero.inference.sim.runners import SimTts
from vocero.inference.sim.script import TtsScript
from vocero.orchestrator.generation import Generation
from vocero.orchestrator.speech_rate import SpeechRate

# ------------------------------------------------------------------------- the estimate


def streaming(sent_ms: float, **fields: object) -> Generation:
    # No event loop here: the generation's cancel scope plays no part in what was heard.
    generation = Generation(generation_id="gen_1", turn_id="turn_1", scope=None)  # type: ignore[arg-type]
    unit = generation.begin_unit(LONG)
    unit.speech_chars = len(LONG)
    for name, value in fields.items():
        setattr(unit, name, value)
    generation.add_audio(unit, sent_ms)
    return generation


def test_a_unit_still_synthesized_is_not_measured_by_the_audio_sent_so_far() -> None:
    heard = streaming(1900.0).heard_text(1500.0)
    assert heard == "", "no alignment and no measured rate: nothing of it is known to be heard"


def test_the_engines_alignment_gives_the_share_of_the_whole_unit() -> None:
    generation = streaming(1900.0, alignment=[(len(LONG) * MS_PER_CHAR, 1.0)])
    heard = generation.heard_text(1500.0)
    assert LONG.startswith(heard)
    assert len(heard) <= played_share(LONG, 1500.0, len(LONG) * MS_PER_CHAR)
    assert heard == "The harbour master was a"


def test_past_the_last_alignment_point_the_slowest_rate_bounds_it() -> None:
    first = LONG.index(",") + 1
    generation = streaming(
        4500.0,
        alignment=[(first * MS_PER_CHAR, first / len(LONG))],
        slowest_ms_per_char=MS_PER_CHAR * 1.2,
    )
    heard = generation.heard_text(4200.0)
    assert LONG[:first].startswith(heard.rstrip(",")) or heard.startswith(LONG[: first - 1])
    assert len(heard) <= played_share(LONG, 4200.0, len(LONG) * MS_PER_CHAR)
    assert len(heard) > first - 2, "everything up to the aligned point was heard"


def test_a_complete_unit_counts_whole_once_played() -> None:
    generation = streaming(len(LONG) * MS_PER_CHAR, complete=True)
    assert generation.heard_text(len(LONG) * MS_PER_CHAR) == LONG


def test_an_incomplete_unit_whose_sent_audio_all_played_is_not_whole() -> None:
    generation = streaming(1900.0, slowest_ms_per_char=MS_PER_CHAR)
    heard = generation.heard_text(1900.0)
    assert heard != LONG
    assert len(heard) <= played_share(LONG, 1900.0, len(LONG) * MS_PER_CHAR)


def test_the_speech_rate_keeps_the_slowest_recent_unit() -> None:
    rate = SpeechRate()
    assert rate.slowest() is None
    rate.learn(5, 1000.0)  # too short to measure
    assert rate.slowest() is None
    rate.learn(40, 2000.0)
    rate.learn(20, 1400.0)
    assert rate.slowest() == 70.0


@given(
    true_ms_per_char=st.floats(20.0, 120.0),
    sent_share=st.floats(0.05, 1.0),
    played_share_of_sent=st.floats(0.0, 1.0),
    slack=st.floats(1.0, 2.0),
    measured=st.booleans(),
)
def test_heard_never_exceeds_what_was_played(
    true_ms_per_char: float,
    sent_share: float,
    played_share_of_sent: float,
    slack: float,
    measured: bool,
) -> None:
    """Whatever the true length of a unit being streamed, and however much of what was sent
    was played, the words counted heard were spoken by then (given a measured rate that is no
    faster than the unit's)."""
    total_ms = len(LONG) * true_ms_per_char
    sent_ms = total_ms * sent_share
    played_ms = sent_ms * played_share_of_sent
    generation = streaming(
        sent_ms, slowest_ms_per_char=true_ms_per_char * slack if measured else None
    )
    heard = generation.heard_text(played_ms)
    assert LONG.startswith(heard)
    assert len(heard) <= played_share(LONG, played_ms, total_ms)


# ------------------------------------------------------------------ on the session path


class UnalignedTts:
    """A streaming TTS that says nothing of its timing (as a remote engine might)."""

    name = "unaligned-tts"

    def __init__(self, script: TtsScript) -> None:
        self._inner = SimTts(script)
        self.sample_rate = self._inner.sample_rate

    async def warm_up(self) -> None:
        return None

    def status(self) -> RunnerStatus:
        return self._inner.status()

    def synthesize(self, text: str, voice: VoiceRef) -> AsyncIterator[bytes]:
        return self._inner.synthesize(text, voice)


@pytest.mark.anyio
@pytest.mark.parametrize("played_ms", [500, 1500, 3000])
async def test_sim_barge_in_mid_unit_reports_only_what_was_played(played_ms: int) -> None:
    runners, *_ = fake_runners(rules=RULES, ms_per_char=MS_PER_CHAR)
    heard, _ = await heard_after(runners, played_ms)
    assert LONG.startswith(heard)
    assert len(heard) <= played_share(LONG, played_ms, len(LONG) * MS_PER_CHAR)
    assert len(heard) >= played_share(LONG, played_ms, len(LONG) * MS_PER_CHAR) - 12, (
        "the sim gives its exact timing: the estimate is within a word of the truth"
    )


@pytest.mark.anyio
@pytest.mark.parametrize("played_ms", [500, 1500, 3000])
async def test_a_tts_without_timing_is_bounded_by_its_measured_rate(played_ms: int) -> None:
    base, *_ = fake_runners(rules=RULES, ms_per_char=MS_PER_CHAR)
    runners = RunnerSet(
        kind="fake", vad=base.vad, stt=base.stt, llm=base.llm,
        tts=UnalignedTts(TtsScript(ms_per_char=MS_PER_CHAR)),
    )
    first, _ = await heard_after(runners, played_ms)
    assert first == "", "before the voice was measured, nothing of an unfinished unit counts"
    heard, _ = await heard_after(runners, played_ms, turns=2)
    assert LONG.startswith(heard)
    assert len(heard) <= played_share(LONG, played_ms, len(LONG) * MS_PER_CHAR)
    if played_ms >= 1500:
        assert heard, "once measured, the rate credits the words that were played"
