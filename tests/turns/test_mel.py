"""Whisper log-mel features of the end-of-turn model's input, against independent references."""

from __future__ import annotations

import numpy as np
import pytest

from vocero.inference.toolkit import mel

RATE = 16_000


def _speechlike(seconds: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(int(RATE * seconds)) / RATE
    carrier = sum(np.sin(2 * np.pi * f * t) / k for k, f in enumerate((180, 360, 720, 1440), 1))
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 4 * t)
    return (0.1 * (carrier + rng.normal(0, 0.3, t.size)) * envelope).astype(np.float32)


def test_the_input_is_80_bands_by_800_frames_of_the_last_8_seconds() -> None:
    for seconds in (0.5, 3.0, 8.0, 11.0):
        features = mel.turn_features(_speechlike(seconds))
        assert features.shape == (1, 80, 800)
        assert features.dtype == np.float32
    assert mel.log_mel(np.zeros(16_000, dtype=np.float32)).shape == (80, 100)  # 10 ms a frame


def test_short_audio_is_padded_in_front_and_long_audio_keeps_its_end() -> None:
    short = np.ones(10, dtype=np.float32)
    padded = mel.last_window(short, samples=16)
    assert padded.tolist() == [0.0] * 6 + [1.0] * 10
    long = np.arange(20, dtype=np.float32)
    assert mel.last_window(long, samples=8).tolist() == list(range(12, 20))


def test_the_window_is_scaled_to_zero_mean_and_unit_variance() -> None:
    scaled = mel.standardise(_speechlike(2.0) * 7 + 0.3)
    assert abs(float(scaled.mean())) < 1e-4
    assert float(scaled.std()) == pytest.approx(1.0, abs=1e-3)


def test_features_match_faster_whisper_s_own_extractor() -> None:
    """An independent implementation of the same Whisper features (faster-whisper's numpy
    extractor, its own filterbank and STFT): the Smart Turn input must be Whisper's."""
    from faster_whisper.feature_extractor import FeatureExtractor

    for seconds, seed in ((2.5, 1), (8.0, 2), (9.5, 3)):
        audio = _speechlike(seconds, seed)
        window = mel.standardise(mel.last_window(audio))
        reference = FeatureExtractor(chunk_length=8)(window, padding=0)
        assert reference.shape == (80, 800)
        assert np.abs(mel.turn_features(audio)[0] - reference).max() < 1e-4


def test_values_span_at_most_8_decades_mapped_by_x_plus_4_over_4() -> None:
    features = mel.turn_features(_speechlike(3.0))
    assert float(features.max() - features.min()) <= 2.0 + 1e-6
    assert float(features.min()) >= -1.5 and float(features.max()) <= 2.5


def test_silence_is_the_floor_everywhere() -> None:
    features = mel.turn_features(np.zeros(RATE, dtype=np.float32))
    assert np.allclose(features, (np.log10(1e-10) + 4) / 4)


def test_a_tone_lands_in_the_band_around_its_frequency() -> None:
    t = np.arange(RATE * 2) / RATE
    features = mel.log_mel(mel.standardise(np.sin(2 * np.pi * 1000 * t).astype(np.float32)))
    band = int(np.median(np.argmax(features, axis=0)))
    # Slaney's scale: 1 kHz is 15 mels, the 8 kHz top ~45.25 mels; 80 bands of equal width.
    centre = 15.0 / (45.245640471924965 / 81) - 1
    assert abs(band - centre) <= 1


def test_a_click_lands_in_the_frame_of_its_time() -> None:
    audio = np.zeros(RATE * 3, dtype=np.float32)
    audio[RATE * 2 : RATE * 2 + 80] = 1.0  # 5 ms burst at 2.000 s
    energy = mel.log_mel(audio).sum(axis=0)
    assert abs(int(np.argmax(energy)) - 200) <= 2  # frames every 10 ms, centred


def test_each_filter_has_unit_area_slaney_normalisation() -> None:
    filters = mel.mel_filters()
    assert filters.shape == (80, 201)
    bin_hz = 8000 / 200
    areas = filters.sum(axis=1) * bin_hz  # a triangle sampled every 40 Hz: within 10 %
    assert np.allclose(areas, 1.0, atol=0.1)
    assert float(areas.mean()) == pytest.approx(1.0, abs=0.01)
    assert (filters >= 0).all()


def test_the_padding_in_front_is_computed_once_and_gives_the_same_features() -> None:
    """A short utterance's padded frames share one spectrum; computed frame by frame (the
    reference), every one of them is the same."""
    from faster_whisper.feature_extractor import FeatureExtractor

    for seconds in (0.02, 0.3, 1.0, 7.99):
        window = mel.standardise(mel.last_window(_speechlike(seconds, 4)))
        repeated = mel.repeated_leading_frames(window)
        assert repeated == max(0, (RATE * 8 - round(RATE * seconds) - 201) // 160 + 1)
        reference = FeatureExtractor(chunk_length=8)(window, padding=0)
        assert np.abs(mel.log_mel(window) - reference).max() < 1e-4
    assert mel.repeated_leading_frames(np.zeros(0, dtype=np.float32)) == 0
    assert mel.repeated_leading_frames(np.zeros(RATE, dtype=np.float32)) == 100


def test_the_reused_buffers_carry_nothing_from_one_call_to_the_next() -> None:
    short, long = _speechlike(1.5, 5), _speechlike(11.0, 6)
    first = mel.turn_features(short).copy()
    mel.turn_features(long)
    mel.log_mel(_speechlike(0.5, 7))  # a different frame count
    assert np.array_equal(mel.turn_features(short), first)


def test_the_reflect_padding_is_numpy_s() -> None:
    for size in (3, 150, 201, 202, 999, RATE):
        audio = np.random.default_rng(size).normal(0, 1, size).astype(np.float32)
        expected = np.pad(audio.astype(np.float64), 200, mode="reflect")
        assert np.array_equal(mel._workspace.pad(audio), expected)


def test_each_worker_thread_has_its_own_scratch_space() -> None:
    from concurrent.futures import ThreadPoolExecutor

    clips = [_speechlike(seconds, seed) for seed, seconds in enumerate((0.7, 3.0, 8.0, 10.0))]
    expected = [mel.turn_features(clip).copy() for clip in clips]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            got = list(pool.map(mel.turn_features, clips))
            assert all(np.array_equal(g, e) for g, e in zip(got, expected, strict=True))
