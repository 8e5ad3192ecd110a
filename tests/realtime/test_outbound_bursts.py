"""The outbound pump sends the frames that are ready together as one burst, held until its last
frame where the server offers a cork (issue 46 item 5: one segment and one wake-up of the
client, not one per frame; item 4: one write too); a lone frame is sent as it is; and a stop decided
in the middle of a burst is seen before the burst's next frame, so nothing of the stopped
generation follows its ``output.stop_and_flush.v1``."""

from __future__ import annotations

import asyncio
import json
from typing import Any, cast

import anyio
import pytest
from starlette.websockets import WebSocket

from vocero.app.websocket_protocol import HeldTransport
from vocero.contracts import events as ev
from vocero.orchestrator.output import OutFrame, OutputChannel
from vocero.relay.outbound import OutboundPump
from vocero.relay.wire import CORK, Wire

pytestmark = pytest.mark.anyio
GEN = "gen_1"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Socket:
    """A WebSocket whose server offers a cork: logs the cork and each frame's type."""

    def __init__(self, *, cork: bool = True) -> None:
        self.log: list[str] = []
        self.scope: dict[str, Any] = {"extensions": {CORK: {"cork": self.cork}} if cork else {}}
        self.uncorked = anyio.Event()
        self.sent = anyio.Event()
        self.hold: anyio.Event | None = None
        """While set up, the first audio frame's send waits for it (a slow socket)."""
        self.holding = anyio.Event()

    def cork(self, on: bool) -> None:
        self.log.append("cork" if on else "uncork")
        if not on:
            self.uncorked.set()

    async def send_text(self, text: str) -> None:
        kind = json.loads(text)["type"].removeprefix("vocero.")
        self.log.append(kind)
        self.sent.set()
        if kind == "response.audio_delta.v1" and self.hold is not None:
            hold, self.hold = self.hold, None
            self.holding.set()
            await hold.wait()


class Metrics:
    def count(self, name: str, amount: float = 1.0, **labels: str) -> None:
        return None

    def gauge(self, name: str, value: float, **labels: str) -> None:
        return None


async def closed(code: int) -> None:
    raise AssertionError(f"closed {code}")


def audio(index: int) -> OutFrame:
    payload = ev.AudioOut(generation_id=GEN, unit_id="unt_1", chunk_index=index,
                          audio=b"\x00\x01" * 1600, sample_rate=16000)  # fmt: skip
    return OutFrame(payload=payload, generation_id=GEN, audio_ms=100.0)


async def queue_answer(out: OutputChannel) -> None:
    """A turn's first output: the response's start, its first words and first audio."""
    out.control(OutFrame(payload=ev.ResponseCreated(generation_id=GEN, turn_id="turn_1")))
    text = ev.TextDelta(generation_id=GEN, unit_id="unt_1", text="Sure.")
    assert await out.data(OutFrame(payload=text, generation_id=GEN))
    for index in range(3):
        assert await out.data(audio(index))


def pump(socket: Socket, out: OutputChannel) -> OutboundPump:
    return OutboundPump(Wire(cast(WebSocket, socket)), out, closed, Metrics())


async def test_the_frames_ready_together_leave_as_one_corked_burst() -> None:
    socket, out = Socket(), OutputChannel()
    await queue_answer(out)
    async with anyio.create_task_group() as tg:
        tg.start_soon(pump(socket, out).run)
        with anyio.fail_after(5):
            await socket.uncorked.wait()
        tg.cancel_scope.cancel()
    assert socket.log == ["cork", "response.created.v1", "response.text_delta.v1",
                          "response.audio_delta.v1", "response.audio_delta.v1",
                          "response.audio_delta.v1", "uncork"]  # fmt: skip


async def test_a_lone_frame_is_sent_without_a_cork() -> None:
    socket, out = Socket(), OutputChannel()
    out.control(OutFrame(payload=ev.StateChanged(state="LISTENING")))
    async with anyio.create_task_group() as tg:
        tg.start_soon(pump(socket, out).run)
        with anyio.fail_after(5):
            await socket.sent.wait()
        tg.cancel_scope.cancel()
    assert socket.log == ["session.state.v1"]


async def test_without_a_cork_offered_the_burst_goes_frame_by_frame_in_the_same_order() -> None:
    socket, out = Socket(cork=False), OutputChannel()
    await queue_answer(out)
    async with anyio.create_task_group() as tg:
        tg.start_soon(pump(socket, out).run)
        with anyio.fail_after(5):
            while len(socket.log) < 5:
                socket.sent = anyio.Event()
                await socket.sent.wait()
        tg.cancel_scope.cancel()
    assert socket.log == ["response.created.v1", "response.text_delta.v1",
                          "response.audio_delta.v1", "response.audio_delta.v1",
                          "response.audio_delta.v1"]  # fmt: skip


async def test_a_stop_during_a_burst_is_sent_next_and_nothing_of_the_generation_after() -> None:
    socket, out = Socket(), OutputChannel()
    gate = socket.hold = anyio.Event()
    await queue_answer(out)
    async with anyio.create_task_group() as tg:
        tg.start_soon(pump(socket, out).run)
        with anyio.fail_after(5):
            await socket.holding.wait()  # the burst's first audio frame is being written
            out.stop_generation(GEN)  # a barge-in, as the session stops an answer
            out.control(OutFrame(payload=ev.StopAndFlush(generation_id=GEN, reason="barge_in")))
            gate.set()
            await socket.uncorked.wait()
        tg.cancel_scope.cancel()
    assert socket.log == ["cork", "response.created.v1", "response.text_delta.v1",
                          "response.audio_delta.v1", "output.stop_and_flush.v1",
                          "uncork"]  # fmt: skip


class Transport:
    """A transport that logs each write (one write is one system call, one segment)."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closing = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def get_extra_info(self, name: str) -> str:
        return f"info:{name}"


def held(transport: Transport) -> HeldTransport:
    return HeldTransport(cast(asyncio.Transport, transport))


def test_the_writes_of_a_burst_leave_in_one_write_in_order() -> None:
    transport = Transport()
    socket = held(transport)
    socket.write(b"alone")
    socket.cork(True)
    socket.write(b"one")
    socket.write(b"two")  # a pong or a ping in the middle keeps its place too
    socket.write(b"three")
    assert transport.writes == [b"alone"]
    socket.cork(False)
    socket.write(b"after")
    assert transport.writes == [b"alone", b"onetwothree", b"after"]
    socket.cork(True)
    socket.cork(False)  # an empty burst writes nothing
    assert len(transport.writes) == 3
    assert socket.get_extra_info("peername") == "info:peername"


def test_a_close_during_a_burst_writes_what_was_held_first() -> None:
    transport = Transport()
    socket = held(transport)
    socket.cork(True)
    socket.write(b"frame")
    socket.close()
    assert transport.writes == [b"frame"] and transport.closing


def test_a_burst_ended_on_a_closed_connection_is_no_error() -> None:
    transport = Transport()
    socket = held(transport)
    socket.cork(True)
    socket.write(b"frame")
    transport.closing = True  # the client went away meanwhile
    socket.cork(False)
    assert transport.writes == []
