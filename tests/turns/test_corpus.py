"""The paused-speech corpus: labels that match the audio, and clips heard the same every time."""

from __future__ import annotations

import numpy as np

from vocero.bench.turn_corpus import CORPUS, active_rms, hear, load_labels, read_flac

MS = 16  # samples per ms


def test_there_are_enough_finished_and_paused_callers_by_both_voices() -> None:
    clips = load_labels().clips
    assert len(clips) >= 40
    kinds = [c.kind for c in clips]
    assert kinds.count("complete") >= 20 and kinds.count("paused") >= 20
    piper = {c.kind for c in clips if c.speaker == "piper"}
    espeak = {c.kind for c in clips if c.speaker != "piper"}
    assert piper == espeak == {"complete", "paused"}
    assert len({c.speed for c in clips}) == 3
    assert len({c.noise for c in clips}) == 3


def test_every_paused_caller_stops_400_to_900_ms_inside_the_sentence() -> None:
    for clip in load_labels().clips:
        if clip.kind == "complete":
            assert clip.pause_ms is None
            continue
        assert clip.pause_ms is not None, clip.id
        start, end = clip.pause_ms
        assert 400 <= end - start <= 900, clip.id
        assert start >= 300 and end + 300 <= clip.speech_end_ms, clip.id


def test_the_labels_match_the_audio() -> None:
    for clip in load_labels().clips:
        clean = read_flac(CORPUS / clip.file)
        assert abs(clean.size / MS - clip.speech_end_ms) <= 1, clip.id
        head, tail = clean[: 20 * MS], clean[-20 * MS :]
        assert active_rms(head) > 0 and active_rms(tail) > 0, f"{clip.id}: trimmed to speech"
        if clip.pause_ms is not None:
            start, end = clip.pause_ms
            assert not clean[start * MS + 16 : end * MS - 16].any(), f"{clip.id}: pause is silent"
            assert np.abs(clean[(start - 60) * MS : start * MS]).max() > 0.01, clip.id
            assert np.abs(clean[end * MS : (end + 60) * MS]).max() > 0.01, clip.id


def test_a_clip_is_heard_with_its_lead_in_level_and_noise_the_same_every_time() -> None:
    label = next(c for c in load_labels().clips if c.kind == "paused")
    clean = read_flac(CORPUS / label.file)
    first, second = hear(label, clean), hear(label, clean)
    assert np.array_equal(first.audio, second.audio)
    assert first.speech_start_ms == label.lead_ms
    assert first.speech_end_ms == label.lead_ms + label.speech_end_ms
    assert first.pause == (label.lead_ms + label.pause_ms[0], label.lead_ms + label.pause_ms[1])
    assert first.audio.size == (label.lead_ms + label.speech_end_ms + 2500) * MS
    peak = float(np.abs(clean).max())
    speech = first.audio[label.lead_ms * MS : (label.lead_ms + label.speech_end_ms) * MS]
    level = active_rms(clean * (10 ** (label.level_db / 20) / peak))
    noise = float(np.sqrt(np.mean(np.square(first.audio[: label.lead_ms * MS]))))
    assert noise > 0, "the line is never digitally silent"
    assert abs(20 * np.log10(level / noise) - label.snr_db) < 1.0
    assert float(np.abs(speech).max()) <= 10 ** (label.level_db / 20) * 1.3


def test_the_committed_audio_stays_small() -> None:
    total = sum(path.stat().st_size for path in CORPUS.glob("*.flac"))
    assert total < 4_000_000


# ----------------------------------------------------------- the held-out half (issue #29)

HELDOUT = CORPUS / "heldout"


def test_the_held_out_half_is_its_authors_sentences_verbatim_each_once() -> None:
    import yaml

    written = yaml.safe_load((HELDOUT / "sentences.yaml").read_text(encoding="utf-8"))
    clips = load_labels(HELDOUT).clips
    complete = [c.text for c in clips if c.kind == "complete"]
    paused = [c.text for c in clips if c.kind == "paused"]
    assert complete == written["complete"]
    assert paused == [p["text"].replace(" | ", " ... ") for p in written["paused"]]
    assert len(complete) >= 60 and len(paused) >= 60
    assert len({c.id for c in clips}) == len(clips)
    assert not {c.text for c in clips} & {c.text for c in load_labels().clips}


def test_the_held_out_half_has_both_engines_several_voices_speeds_and_noises() -> None:
    clips = load_labels(HELDOUT).clips
    for kind in ("complete", "paused"):
        mine = [c for c in clips if c.kind == kind]
        assert {c.speaker == "piper" for c in mine} == {True, False}
        assert len({c.speaker for c in mine}) >= 5
        assert len({c.speed for c in mine if c.speaker == "piper"}) == 5
        assert len({c.noise for c in mine}) == 3


def test_the_held_out_pauses_are_the_ones_their_author_wrote() -> None:
    import yaml

    written = yaml.safe_load((HELDOUT / "sentences.yaml").read_text(encoding="utf-8"))
    pauses = [p["pause_ms"] for p in written["paused"]]
    labels = [c for c in load_labels(HELDOUT).clips if c.kind == "paused"]
    for label, pause in zip(labels, pauses, strict=True):
        assert label.pause_ms is not None
        start, end = label.pause_ms
        assert abs((end - start) - pause) <= 1, label.id
        clean = read_flac(HELDOUT / label.file)
        assert abs(clean.size / MS - label.speech_end_ms) <= 1, label.id
        assert not clean[start * MS + 16 : end * MS - 16].any(), f"{label.id}: pause is silent"


def test_the_held_out_audio_stays_small() -> None:
    assert sum(path.stat().st_size for path in HELDOUT.glob("*.flac")) < 12_000_000
