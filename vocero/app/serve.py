"""``vocero serve``: uvicorn around the app, the ready line, SIGTERM drain; with
``--workers N`` (N > 1) a supervisor of N such processes (:mod:`vocero.app.workers`)."""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import socket
import sys
from collections.abc import Iterator, Sequence

import anyio
import structlog
import uvicorn

from vocero.app.http.operator_api import CALLBACK_PATH
from vocero.app.server import create_app
from vocero.app.settings import Settings
from vocero.app.websocket_protocol import CorkingWebSockets
from vocero.observability import allocator
from vocero.observability.logging import configure_logging
from vocero.store.retention import load_policy


def serve(settings: Settings, argv: Sequence[str] = ()) -> int:
    """Serve until SIGTERM; ``argv`` are the flags ``serve`` was given (workers get them)."""
    configure_logging(  # the OAuth callback's query holds a code and a state: never logged
        settings.log_format,  # type: ignore[arg-type]
        route_stdlib=True,
        private_paths=(CALLBACK_PATH,),
    )
    from vocero.app.workers import WorkersError, serve_workers, worker_count, worker_index

    try:
        count = worker_count(settings.workers)
        if count > 1:
            return serve_workers(settings, argv, count)
    except WorkersError as exc:
        print(f"vocero: {exc}", file=sys.stderr)
        return 2
    index = worker_index()
    if index is not None:
        structlog.contextvars.bind_contextvars(worker=index)
    if settings.heap_trim_s > 0:  # one C heap arena, before any thread allocates (Settings)
        allocator.single_arena()
    from vocero.app.runtime import load_config

    loaded = load_config(settings)  # fail fast, before binding, on a bad config file
    load_policy(settings.retention)
    if settings.runners == "cpu":  # a changed or unpinned model file refuses to start
        from vocero.inference.cpu import CpuSettings, check_pins, model_paths

        check_pins(model_paths(CpuSettings.from_env()))
    # A long-lived server freezes its warm heap out of the garbage collector (Settings).
    app = create_app(dataclasses.replace(settings, freeze_heap=True), loaded)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,
        lifespan="on",
        ws_max_size=1024 * 1024,
        # Browsers offer permessage-deflate and uvicorn accepts it by default: zlib on every
        # frame, most of them base64 audio that hardly compresses. Declined, frames go as they are.
        ws_per_message_deflate=False,
        ws=CorkingWebSockets,  # uvicorn's own, with a cork for the relay's bursts
        timeout_graceful_shutdown=8,
        ws_ping_interval=20,
        # TLS of its own (https and wss) with --ssl-certfile/--ssl-keyfile (docs/deployment.md).
        ssl_certfile=settings.ssl_certfile or None,
        ssl_keyfile=settings.ssl_keyfile or None,
        # Forwarded headers are believed by the app, and only from --forwarded-allow-ips
        # (vocero.app.server); uvicorn's own default would believe 127.0.0.1.
        proxy_headers=False,
    )
    server = _DrainingServer(config)
    try:
        sockets = [_listening_socket(settings, shared=index is not None)]
    except OSError as exc:
        print(f"vocero: cannot listen on {settings.host}:{settings.port}: {exc}", file=sys.stderr)
        return 1
    anyio.run(_serve, server, settings, sockets, backend_options=_loop_options())
    return 0


SEND_BUFFER_BYTES = 64 * 1024
"""Each connection's kernel send buffer (``SO_SNDBUF``; Linux doubles it for bookkeeping). Left
to itself, Linux grows it to megabytes for a peer that stops reading: a client that cannot
report playout would be sent, and hear late, a minute of stale audio. Capped, a stalled
connection fills it within seconds, the relay's send waits, and the speaker sheds the rest of
the answer (docs/protocol.md, "A client that stops reading"). Ample for speech and HTTP."""


def _listening_socket(settings: Settings, *, shared: bool) -> socket.socket:
    """The listening socket; every accepted connection inherits its send buffer.
    ``shared``: other workers bind it too (``SO_REUSEPORT``: the kernel spreads new
    connections over the processes listening on the port)."""
    family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if shared:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
    sock.bind((settings.host, settings.port))
    sock.listen(2048)
    sock.setblocking(False)
    return sock


def _loop_options() -> dict[str, bool]:
    """uvloop when installed (``uvicorn[standard]`` brings it): its transports read, pause and
    write in C, a large share of the per-frame cost of the realtime endpoint."""
    try:
        import uvloop  # noqa: F401
    except ImportError:  # pragma: no cover
        return {}
    return {"use_uvloop": True}


class _DrainingServer(uvicorn.Server):
    """SIGTERM/SIGINT start a graceful drain and the process then exits 0 (uvicorn re-raises the
    signal after shutdown by default, which would end the process with -15)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        previous = {
            sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


async def _serve(
    server: uvicorn.Server, settings: Settings, sockets: list[socket.socket] | None
) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(_announce, server, settings)
        await server.serve(sockets=sockets)
        tg.cancel_scope.cancel()


async def _announce(server: uvicorn.Server, settings: Settings) -> None:
    while not server.started:  # noqa: ASYNC110 - uvicorn exposes a flag, not an event
        await anyio.sleep(0.02)
    print(f"vocero listening on {settings.scheme}://{settings.host}:{settings.port}", flush=True)
    sys.stdout.flush()
