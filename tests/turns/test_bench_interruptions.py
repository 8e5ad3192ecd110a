"""``vocero bench false-interruptions``' scoring and sounds (no model: the transcripts are
given)."""

from __future__ import annotations

import numpy as np

from vocero.bench.interruptions import NOISES, Heard, noise_clips, on_a_line, scores


def test_precision_and_recall_of_resume_against_the_clips_that_should_resume() -> None:
    heard = [
        Heard("cough-0", "noise", 300, ""),
        Heard("hum-0", "noise", 400, "Hmm."),
        Heard("mm", "backchannel", 350, "And then them."),  # heard as words: not resumed
        Heard("c00", "speech", 1000, "Where is my order?"),
        Heard("c01:start", "speech_start", 700, "Um."),  # a filler only: wrongly resumed
        Heard("c02", "speech", 2400, ""),  # no words, but far past the window
    ]
    words = scores(heard, None)
    assert (words["precision"], words["recall"]) == (round(2 / 4, 4), round(2 / 3, 4))
    windowed = scores(heard, 1500)
    assert (windowed["precision"], windowed["recall"]) == (round(2 / 3, 4), round(2 / 3, 4))
    assert windowed["wrongly_resumed"] == ["c01:start: 'Um.'"]
    assert windowed["by_kind"]["speech"] == "0/2 resumed"


def test_the_sounds_are_fixed_by_their_seeds_and_sit_on_a_noisy_line() -> None:
    first, again = noise_clips(per_kind=1), noise_clips(per_kind=1)
    assert [c[0] for c in first] == [f"{name}-0" for name in NOISES]
    for (_, kind, sound, ms), (_, _, same, _) in zip(first, again, strict=True):
        assert kind == "noise" and np.array_equal(sound, same) and 100 < ms < 1500
    line = on_a_line(first[0][2], seed=3)
    quiet = line[: 16_000 // 10]
    assert 0 < float(np.sqrt(np.mean(quiet**2))) < 0.05, "line noise before the sound"
