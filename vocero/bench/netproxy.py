"""An impaired network path between a client and a server: a TCP proxy on loopback that delays,
jitters, rate-limits, stalls and cuts what passes through it, in each direction (``vocero bench
network`` and the impaired-network tests, ``tests/realtime/test_impaired_network.py``).

The kernel's ``tc netem`` inside a network namespace would do this below TCP, but the sandbox's
kernel has no ``netem`` qdisc (``Specified qdisc kind is unknown``), so the impairment is applied
to the byte stream instead (issue 46, item 2):

* delay with jitter: each chunk read from one side is due ``one_way_ms`` ± ``jitter_ms``
  (uniform, seeded) after it was read, and never before the chunk before it (TCP keeps order, so
  jitter shows as bunching, not reordering);
* bandwidth cap: a token bucket of ``rate_bytes_s`` with ``burst_bytes`` of depth, applied when a
  chunk leaves (so a backlog after a stall also drains at the cap);
* stall: :meth:`NetProxy.stall` holds every byte of every direction for N seconds;
* cut: :meth:`NetProxy.cut` drops every connection at once: what the path still holds is lost,
  the client's side gets a reset (``SO_LINGER`` 0), the server's side an orderly close after
  what was already delivered (a reset would make the server's kernel discard bytes it had
  received but its process had not read yet, which no mid-path cut does).

Each direction's queue is bounded, so a slow path pushes back on the sender through TCP as a
real bottleneck does. Counters per direction (bytes read, bytes delivered) let a test wait until
what a client sent has reached the server before it cuts.
"""

from __future__ import annotations

import random
import socket
import struct
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Self

import anyio
from anyio import CancelScope
from anyio.abc import SocketAttribute, SocketStream, TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

CHUNK_BYTES = 4096
"""Reads are at most this large, so a rate cap and jitter act on small pieces of a big frame."""
QUEUE_CHUNKS = 256
"""Chunks a direction holds before the proxy stops reading that side (1 MiB at most)."""


@dataclass(frozen=True, slots=True)
class Impairment:
    """What the path does to each direction (the same both ways)."""

    name: str
    one_way_ms: float = 0.0
    jitter_ms: float = 0.0
    rate_bytes_s: float | None = None
    burst_bytes: int = 16 * 1024
    seed: int = 46

    @property
    def min_one_way_s(self) -> float:
        """The least any byte takes through the proxy one way."""
        return max(0.0, self.one_way_ms - self.jitter_ms) / 1000.0


@dataclass(slots=True)
class Direction:
    """One direction of one connection: its counters and pacing state."""

    read: int = 0
    delivered: int = 0
    last_due: float = 0.0
    tat: float = 0.0
    """Token bucket: the theoretical time the bucket is full again (GCRA)."""


@dataclass(slots=True)
class Link:
    client: SocketStream
    server: SocketStream
    scope: CancelScope
    up: Direction = field(default_factory=Direction)
    down: Direction = field(default_factory=Direction)


def _reset_on_close(stream: SocketStream) -> None:
    raw: socket.socket = stream.extra(SocketAttribute.raw_socket)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


class NetProxy:
    """``async with NetProxy(port, impairment) as proxy``: clients connect to ``proxy.port``."""

    def __init__(self, upstream_port: int, impairment: Impairment,
                 host: str = "127.0.0.1") -> None:
        self.upstream_port = upstream_port
        self.impairment = impairment
        self.host = host
        self.port = 0
        self.links: list[Link] = []
        self.stalled_until = 0.0
        self._rng = random.Random(impairment.seed)
        self._stack = AsyncExitStack()
        self._tg: TaskGroup | None = None
        self._moved = anyio.Event()

    async def __aenter__(self) -> Self:
        listener = await anyio.create_tcp_listener(local_host=self.host, local_port=0)
        self.port = int(listener.extra(SocketAttribute.local_port))
        await self._stack.enter_async_context(listener)
        self._tg = await self._stack.enter_async_context(anyio.create_task_group())
        self._tg.start_soon(listener.serve, self._handle)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._tg is not None
        self._tg.cancel_scope.cancel()
        await self._stack.aclose()

    # --------------------------------------------------------------------------- controls

    def stall(self, seconds: float) -> None:
        """Hold every byte, both ways, for ``seconds`` from now (then release them in order)."""
        self.stalled_until = max(self.stalled_until, time.monotonic() + seconds)

    def cut(self) -> None:
        """Cut every open connection now: bytes the path still holds (either way) are lost,
        the client's side is reset (it sees the drop at once) and the server's side closed
        (what it had received it still reads, then the end of the stream; a server that only
        learnt of the drop from its keepalive 20 s later would make the same decisions, later)."""
        for link in self.links:
            _reset_on_close(link.client)
            link.scope.cancel()

    def up_flushed(self) -> bool:
        """Everything the clients of the open connections sent so far has reached the
        server."""
        return all(link.up.delivered == link.up.read for link in self.links)

    async def wait_up_flushed(self, timeout_s: float = 10.0) -> None:
        """Until :meth:`up_flushed` (woken by each delivery, no polling)."""
        with anyio.fail_after(timeout_s):
            while not self.up_flushed():
                await self._moved.wait()

    # ----------------------------------------------------------------------------- relay

    async def _handle(self, client: SocketStream) -> None:
        async with client:
            try:
                server = await anyio.connect_tcp(self.host, self.upstream_port)
            except OSError:
                return
            async with server, anyio.create_task_group() as tg:
                link = Link(client, server, tg.cancel_scope)
                self.links.append(link)
                for src, dst, state in ((client, server, link.up), (server, client, link.down)):
                    send, receive = anyio.create_memory_object_stream[tuple[float, bytes]](
                        QUEUE_CHUNKS)
                    tg.start_soon(self._read, src, send, state)
                    tg.start_soon(self._write, receive, dst, state, tg.cancel_scope)
            self.links.remove(link)  # ended (or cut): what it lost counts no more

    async def _read(self, src: SocketStream, queue: MemoryObjectSendStream[tuple[float, bytes]],
                    state: Direction) -> None:
        imp = self.impairment
        async with queue:
            while True:
                try:
                    chunk = await src.receive(CHUNK_BYTES)
                except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    return
                state.read += len(chunk)
                delay = imp.one_way_ms + self._rng.uniform(-imp.jitter_ms, imp.jitter_ms)
                due = max(time.monotonic() + max(0.0, delay) / 1000.0, state.last_due)
                state.last_due = due
                await queue.send((due, chunk))

    async def _write(self, queue: MemoryObjectReceiveStream[tuple[float, bytes]],
                     dst: SocketStream, state: Direction, scope: CancelScope) -> None:
        rate, burst = self.impairment.rate_bytes_s, self.impairment.burst_bytes
        async with queue:
            async for due, chunk in queue:
                while True:
                    leave = max(due, self.stalled_until)
                    if rate is not None:
                        leave = max(leave, state.tat + (len(chunk) - burst) / rate)
                    wait = leave - time.monotonic()
                    if wait <= 0:
                        break
                    await anyio.sleep(wait)  # the path's own delay, not a synchronisation
                if rate is not None:
                    state.tat = max(state.tat, time.monotonic()) + len(chunk) / rate
                try:
                    await dst.send(chunk)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    scope.cancel()
                    return
                state.delivered += len(chunk)
                self._moved.set()
                self._moved = anyio.Event()
        try:
            await dst.send_eof()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            scope.cancel()
