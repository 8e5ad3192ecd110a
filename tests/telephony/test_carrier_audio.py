"""Carrier audio: μ-law at 8 kHz in 20 ms frames, to and from the session's PCM16."""

from __future__ import annotations

import math

import numpy as np

from vocero.relay.telephony.audio import (
    FRAME_BYTES,
    CarrierDecoder,
    CarrierEncoder,
    pcm16_to_ulaw,
    ulaw_to_pcm16,
)


def tone(rate: int, ms: int, hz: float = 440.0, amplitude: float = 12000.0) -> np.ndarray:
    t = np.arange(rate * ms // 1000) / rate
    return (amplitude * np.sin(2 * math.pi * hz * t)).astype(np.int16)


def snr_db(reference: np.ndarray, test: np.ndarray) -> float:
    ref = reference.astype(np.float64)
    noise = ref - test.astype(np.float64)
    return 10 * math.log10(float(np.sum(ref**2)) / max(float(np.sum(noise**2)), 1e-9))


def best_aligned_snr(reference: np.ndarray, test: np.ndarray, max_lag: int = 200) -> float:
    """SNR at the lag that lines the two up (a resampler delays its output a little)."""
    n = min(len(reference), len(test)) - max_lag
    return max(
        snr_db(reference[:n], test[lag : lag + n]) for lag in range(max_lag)
    )


def test_ulaw_matches_g711_reference_codes() -> None:
    # G.711: zero is 0xFF, full-scale positive 0x80, full-scale negative 0x00.
    assert pcm16_to_ulaw(np.array([0, 32767, -32768], dtype=np.int16)) == b"\xff\x80\x00"
    decoded = ulaw_to_pcm16(b"\xff\x7f\x80\x00")
    assert decoded[0] == 0 and decoded[1] == 0
    assert decoded[2] == 32124 and decoded[3] == -32124


def test_ulaw_round_trip_keeps_speech_quality() -> None:
    signal = tone(8000, 500)
    restored = ulaw_to_pcm16(pcm16_to_ulaw(signal))
    assert snr_db(signal, restored) > 30.0  # G.711 gives ~38 dB on a loud tone


def test_encoder_frames_are_exactly_20_ms_of_8_khz_ulaw() -> None:
    encoder = CarrierEncoder(source_rate=22050)
    frames: list[bytes] = []
    signal = tone(22050, 730)
    for start in range(0, len(signal), 997):  # odd chunk sizes, as a TTS hands them over
        frames += encoder.encode(signal[start : start + 997].tobytes())
    assert encoder.holding
    frames += encoder.flush()
    assert not encoder.holding
    assert all(len(f) == FRAME_BYTES == 160 for f in frames)
    assert len(frames) == math.ceil(730 / 20)
    assert encoder.sent_ms == encoder.source_ms == 16096 * 1000 / 22050


def test_encoder_sent_ms_never_runs_ahead_of_the_frames() -> None:
    encoder = CarrierEncoder(source_rate=16000)
    frames = encoder.encode(tone(16000, 50).tobytes())
    assert encoder.sent_ms <= len(frames) * 20 <= encoder.source_ms


def test_down_and_up_through_the_carrier_keeps_a_voice_band_tone() -> None:
    source = tone(16000, 1000, hz=700.0)
    encoder = CarrierEncoder(source_rate=16000)
    frames = encoder.encode(source.tobytes()) + encoder.flush()
    decoder = CarrierDecoder(session_rate=16000)
    back = np.frombuffer(b"".join(decoder.decode(f) for f in frames), dtype="<i2")
    assert abs(len(back) - len(source)) <= 320
    assert best_aligned_snr(source[400:-400], back[400:]) > 25.0


def test_resampling_in_pieces_equals_resampling_whole() -> None:
    import soxr

    from vocero.relay.telephony.audio import Resampler

    rng = np.random.default_rng(7)
    for source, target in ((8000, 16000), (22050, 8000), (24000, 8000)):
        signal = (tone(source, 1000) + rng.normal(0, 400, source)).astype(np.int16)
        whole = soxr.resample(signal, source, target, quality="HQ")
        resampler = Resampler(source, target)
        pieces = [resampler.convert(signal[i : i + 333]) for i in range(0, len(signal), 333)]
        joined = np.concatenate([*pieces, resampler.flush()])
        assert len(joined) == len(whole) == target
        assert snr_db(whole, joined) > 60.0  # the same signal, up to int16 rounding
