"""The per-frame helpers of the realtime path keep their exact results while doing less work:
envelope timestamps and ids, the simulator's energy VAD and its synthetic voice."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

import anyio
import numpy as np
import pytest

from vocero.contracts import codec
from vocero.contracts.events import TextDelta
from vocero.contracts.ports import VadEvent
from vocero.inference.sim.runners import _tone
from vocero.inference.sim.vad import EnergyVad
from vocero.orchestrator.output import OutFrame, OutputChannel


@pytest.mark.parametrize(
    "ns",
    [
        1_798_761_599_999_999_999,  # the last nanosecond of a minute (and of 2026)
        1_798_761_600_000_000_000,
        1_798_761_600_000_999_999,
        1_798_761_659_123_456_789,
        1_700_000_000_500_000_000,
    ],
)
def test_timestamps_match_isoformat_to_the_millisecond(
    monkeypatch: pytest.MonkeyPatch, ns: int
) -> None:
    monkeypatch.setattr(codec, "_minute_prefix", (-1, ""))
    monkeypatch.setattr(codec.time, "time_ns", lambda: ns)
    moment = datetime.fromtimestamp(ns // 1000 / 1e6, UTC)
    expected = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert codec.now_rfc3339() == expected
    assert codec.now_rfc3339() == expected  # from the cached minute


def test_timestamps_follow_the_clock_across_minutes(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([1_798_761_599_999_000_000, 1_798_761_600_001_000_000])
    monkeypatch.setattr(codec.time, "time_ns", lambda: next(clock))
    assert codec.now_rfc3339() == "2026-12-31T23:59:59.999Z"
    assert codec.now_rfc3339() == "2027-01-01T00:00:00.001Z"


def test_real_timestamps_are_now() -> None:
    stamp = codec.now_rfc3339()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp)
    parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    assert abs(parsed - time.time()) < 1.0


def test_event_ids_are_unique_128_bit_hex() -> None:
    ids = {codec.new_event_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(re.fullmatch(r"evt_[0-9a-f]{32}", i) for i in ids)


# ---------------------------------------------------------------------------------- sim VAD


class ReferenceVad:
    """The simulator VAD as first written: float RMS of each 20 ms frame."""

    def __init__(self, threshold: float, start_ms: int, stop_ms: int) -> None:
        self.threshold, self.start, self.stop = threshold, start_ms // 20, stop_ms // 20
        self.pending, self.elapsed, self.speaking, self.run, self.voiced = b"", 0, False, 0, 0

    def push(self, pcm16: bytes) -> list[tuple[str, int, int]]:
        data = self.pending + pcm16
        whole = len(data) - len(data) % 640
        self.pending = data[whole:]
        events = []
        for offset in range(0, whole, 640):
            samples = np.frombuffer(data[offset : offset + 640], "<i2").astype(np.float64)
            loud = float(np.sqrt(np.mean((samples / 32768.0) ** 2))) >= self.threshold
            self.elapsed += 20
            self.voiced += 20 if loud else 0
            self.run = self.run + 1 if loud != self.speaking else 0
            if not self.speaking and self.run >= self.start:
                self.speaking, self.run, self.voiced = True, 0, self.start * 20
                events.append(("speech_started", self.elapsed - self.start * 20, self.voiced))
            elif self.speaking and self.run >= self.stop:
                self.speaking, self.run = False, 0
                events.append(("speech_stopped", self.elapsed - self.stop * 20, self.voiced))
        return events


def _frames(seed: int, count: int, threshold: float) -> bytes:
    """Runs of frames whose loudness sits around the threshold (a few percent either side of
    it, too), and runs of quiet long enough to end speech."""
    rng = np.random.default_rng(seed)
    chunks = []
    while len(chunks) < count:
        if rng.random() < 0.5:
            levels = rng.choice([0.2, 0.97, 0.995, 1.005, 1.03, 3.0], size=rng.integers(2, 30))
        else:
            levels = np.full(rng.integers(5, 30), 0.5)
        for level in levels:
            wave = rng.standard_normal(320)
            wave *= level * threshold * 32768.0 / float(np.sqrt(np.mean(wave**2)))
            chunks.append(np.clip(wave, -32768, 32767).astype("<i2").tobytes())
    return b"".join(chunks)


@pytest.mark.parametrize("chunk_bytes", [640, 100, 1000, 6400])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_energy_vad_decides_like_the_reference(chunk_bytes: int, seed: int) -> None:
    vad = EnergyVad()
    stream = vad.open()
    reference = ReferenceVad(vad.threshold, vad.start_ms, vad.stop_ms)
    audio = _frames(seed, 600, vad.threshold)
    got: list[tuple[str, int]] = []
    want: list[tuple[str, int]] = []
    for offset in range(0, len(audio), chunk_bytes):
        chunk = audio[offset : offset + chunk_bytes]
        events: list[VadEvent] = stream.push(chunk)
        got += [(e.kind, e.at_ms) for e in events]
        want += [(kind, at_ms) for kind, at_ms, _ in reference.push(chunk)]
        assert stream.voiced_ms == reference.voiced
    assert got == want
    assert len(got) > 4


def test_energy_vad_reset_drops_a_partial_frame() -> None:
    stream = EnergyVad(start_ms=20).open()
    loud = (np.full(320, 8000, dtype="<i2")).tobytes()
    assert stream.push(loud[:300]) == []
    stream.reset()
    assert stream.push(loud[300:]) == []  # 340 bytes: not a whole frame on their own
    assert [e.kind for e in stream.push(loud)] == ["speech_started"]


# ------------------------------------------------------------------------------ sim voice


def test_cached_tone_chunks_are_the_computed_ones() -> None:
    for start, count in [(0, 320), (320, 320), (96_000, 320), (640, 17)]:
        assert _tone(start, count, 16000) == _tone.__wrapped__(start, count, 16000)
        assert _tone(start, count, 16000) is _tone(start, count, 16000)


# ------------------------------------------------------------------------- output channel


def test_playout_lookup_keeps_one_track_per_generation() -> None:
    out = OutputChannel(monotonic=time.monotonic)
    track = out.playout_of("gen_1")
    track.sent_ms = 40.0
    assert out.playout_of("gen_1") is track
    assert out.acknowledged_ms("gen_2") == 0.0
    assert out.playout_of("gen_2") is not track


@pytest.mark.anyio
async def test_a_blocked_producer_resumes_once_the_lane_drained_to_half() -> None:
    out = OutputChannel(data_capacity=4, playout_acks=True, monotonic=time.monotonic)

    def text(n: int) -> OutFrame:
        return OutFrame(
            payload=TextDelta(generation_id="g", unit_id="u", text=str(n)), generation_id="g"
        )

    for n in range(4):
        assert await out.data(text(n))
    queued = anyio.Event()

    async def produce() -> None:
        assert await out.data(text(4))
        queued.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(produce)
        await anyio.wait_all_tasks_blocked()
        await out.receive()
        await anyio.wait_all_tasks_blocked()
        assert not queued.is_set()  # three left: still above half
        await out.receive()
        with anyio.fail_after(1):
            await queued.wait()
    texts = []
    for _ in range(3):
        frame = await out.receive()
        assert frame is not None and isinstance(frame.payload, TextDelta)
        texts.append(frame.payload.text)
    assert texts == ["2", "3", "4"]
