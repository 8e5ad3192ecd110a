"""The outbound pump sends the frames that are ready together as one burst, held in the socket
until its last frame where the server offers a cork (issue 46 item 5: one segment and one
wake-up of the client, not one per frame); a lone frame is sent as it is; and a stop decided
in the middle of a burst is seen before the burst's next frame, so nothing of the stopped
generation follows its ``output.stop_and_flush.v1``."""

from __future__ import annotations

import json
import socket as socket_module
from typing import Any, cast

import anyio
import pytest
from starlette.websockets import WebSocket

from vocero.app.websocket_protocol import cork_switch
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


def test_the_servers_cork_switch_corks_a_tcp_socket_and_a_closed_one_is_no_error() -> None:
    with socket_module.create_server(("127.0.0.1", 0)) as server:
        with socket_module.create_connection(server.getsockname()) as client:
            cork = cork_switch(client)
            assert cork is not None
            cork(True)
            assert client.getsockopt(socket_module.IPPROTO_TCP, socket_module.TCP_CORK) == 1
            cork(False)
            assert client.getsockopt(socket_module.IPPROTO_TCP, socket_module.TCP_CORK) == 0
        cork(True)  # closed meanwhile: what it held is gone with it
    assert cork_switch(None) is None


class _GoneDescriptor:
    """uvloop's stand-in socket once the connection's descriptor is gone: it builds a socket
    from fd -1, which raises ValueError (seen in tests/scaling/test_live_fuzz.py's server)."""

    def setsockopt(self, *_: object) -> None:
        raise ValueError("negative file descriptor")


def test_a_cork_on_a_connection_whose_descriptor_is_gone_is_no_error() -> None:
    cork = cork_switch(_GoneDescriptor())
    assert cork is not None
    cork(True)
    cork(False)
