"""The impaired path itself (:mod:`tests.support.netproxy`): it delays, keeps order under jitter,
caps the rate, stalls and cuts, so the figures measured through it mean what they say."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
from anyio.abc import SocketAttribute, SocketStream

from tests.support.netproxy import Impairment, NetProxy

pytestmark = pytest.mark.anyio


async def _echo(stream: SocketStream) -> None:
    async with stream:
        try:
            while True:
                await stream.send(await stream.receive())
        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            return


@asynccontextmanager
async def through(impairment: Impairment) -> AsyncIterator[tuple[NetProxy, SocketStream]]:
    """An echo server behind the proxy, and a client connected through it."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = int(listener.extra(SocketAttribute.local_port))
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, _echo)
        async with NetProxy(port, impairment) as proxy, \
                await anyio.connect_tcp("127.0.0.1", proxy.port) as client:
            yield proxy, client
        tg.cancel_scope.cancel()


async def receive_exactly(stream: SocketStream, size: int) -> bytes:
    data = b""
    while len(data) < size:
        data += await stream.receive()
    return data


async def test_delay_applies_each_way_and_jitter_keeps_order() -> None:
    async with through(Impairment("lag", one_way_ms=60, jitter_ms=40)) as (_, client):
        started = time.monotonic()
        await client.send(b"x")
        assert await receive_exactly(client, 1) == b"x"
        assert time.monotonic() - started >= 2 * 0.020, "at least the least delay, both ways"
        sent = b"".join(b"%05d" % i for i in range(2000))
        for at in range(0, len(sent), 100):  # 100 writes, each chunk jittered on its own
            await client.send(sent[at:at + 100])
        with anyio.fail_after(10):
            assert await receive_exactly(client, len(sent)) == sent


async def test_the_rate_cap_holds() -> None:
    rate, size = 200_000, 100_000
    async with through(Impairment("cap", rate_bytes_s=rate, burst_bytes=8192)) as (_, client):
        started = time.monotonic()
        await client.send(bytes(size))
        with anyio.fail_after(10):
            await receive_exactly(client, size)
        took = time.monotonic() - started  # the two directions overlap: one pass at the cap
        assert (size - 8192) / rate * 0.95 <= took < 4 * size / rate, took


async def test_a_stall_holds_bytes_and_a_cut_ends_the_connection() -> None:
    async with through(Impairment("plain")) as (proxy, client):
        proxy.stall(0.3)
        started = time.monotonic()
        await client.send(b"held")
        assert await receive_exactly(client, 4) == b"held"
        assert time.monotonic() - started >= 0.3
        proxy.cut()
        with anyio.fail_after(5), pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError,
                                                 ConnectionResetError)):
            await client.receive()
