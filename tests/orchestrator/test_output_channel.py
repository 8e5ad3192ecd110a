"""The output link: control first, stale partials coalesced, bounded lanes, stopped generations."""

from __future__ import annotations

import anyio
import pytest

from vocero.contracts import events as ev
from vocero.orchestrator.output import ControlLaneFull, OutFrame, OutputChannel

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def channel(**kwargs: object) -> OutputChannel:
    return OutputChannel(monotonic=Clock(), playout_acks=True, **kwargs)  # type: ignore[arg-type]


def audio(gen: str, ms: float = 100.0) -> OutFrame:
    payload = ev.AudioOut(
        generation_id=gen, unit_id="u0", chunk_index=0, audio=b"", sample_rate=16000
    )
    return OutFrame(payload=payload, generation_id=gen, audio_ms=ms)


def state(name: str) -> OutFrame:
    return OutFrame(payload=ev.StateChanged(state=name))  # type: ignore[arg-type]


async def test_control_overtakes_queued_audio() -> None:
    out = channel()
    for _ in range(3):
        assert await out.data(audio("g1"))
    out.control(state("SPEAKING"))
    first = await out.receive()
    assert first is not None and isinstance(first.payload, ev.StateChanged)


async def test_stale_partials_coalesce_but_finals_do_not() -> None:
    out = channel()
    for text in ("wh", "what is", "what is the"):
        out.partial(
            OutFrame(payload=ev.Transcript(turn_id="", text=text), envelope=ev.TranscriptPartialV1)
        )
    for text in ("first final", "second final"):
        out.control(
            OutFrame(payload=ev.Transcript(turn_id="t", text=text), envelope=ev.TranscriptFinalV1)
        )
    received = [await out.receive() for _ in range(3)]
    texts = [f.payload.text for f in received if f is not None]  # type: ignore[attr-defined]
    assert texts == ["first final", "second final", "what is the"]
    assert out.coalesced == 2


async def test_a_slow_client_cannot_grow_the_data_lane() -> None:
    out = channel(data_capacity=4)
    for _ in range(4):
        assert await out.data(audio("g1"))
    with anyio.move_on_after(0.05) as blocked:
        await out.data(audio("g1"))
    assert blocked.cancelled_caught, "the producer waits instead of queueing more"


async def test_a_client_that_never_reads_is_cut_off_not_buffered() -> None:
    out = channel(control_capacity=8)
    for _ in range(8):
        out.control(state("LISTENING"))
    out.control(state("LISTENING"))  # never raises into the producer (the session)
    assert out.overflowed.is_set(), "the relay closes the connection (1008)"
    with pytest.raises(ControlLaneFull):
        await out.receive()


async def test_stopping_a_generation_removes_and_refuses_its_frames() -> None:
    out = channel()
    assert await out.data(audio("g1"))
    assert await out.data(audio("g2"))
    assert out.stop_generation("g1") == 1
    assert not await out.data(audio("g1"))
    frame = await out.receive()
    assert frame is not None and frame.generation_id == "g2"


async def test_pacing_holds_audio_beyond_max_lead_until_playout() -> None:
    out = channel(max_lead_ms=400)
    for _ in range(8):
        assert await out.data(audio("g1", 100))
    sent = 0
    with anyio.move_on_after(0.05):
        while True:
            await out.receive()
            sent += 1
    assert sent == 4
    out.report_playout("g1", 200)
    for _ in range(2):
        await out.receive()
    with anyio.move_on_after(0.05) as blocked:
        await out.receive()
    assert blocked.cancelled_caught
    assert out.playout_of("g1").sent_ms == 600


async def test_playout_reports_are_clamped_to_audio_sent() -> None:
    out = channel()
    assert await out.data(audio("g1", 100))
    await out.receive()
    out.report_playout("g1", 10_000)
    assert out.acknowledged_ms("g1") == 100
