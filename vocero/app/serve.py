"""``vocero serve``: uvicorn around the app, the ready line, SIGTERM drain."""

from __future__ import annotations

import sys

import anyio
import uvicorn

from vocero.app.server import create_app
from vocero.app.settings import Settings
from vocero.observability.logging import configure_logging


def serve(settings: Settings) -> int:
    configure_logging(settings.log_format, route_stdlib=True)  # type: ignore[arg-type]
    from vocero.app.runtime import load_config

    load_config(settings)  # fail fast, before binding, on a bad identities or profiles file
    app = create_app(settings)
    config = uvicorn.Config(
        app, host=settings.host, port=settings.port, log_config=None, lifespan="on",
        ws_max_size=1024 * 1024, timeout_graceful_shutdown=8, ws_ping_interval=20,
    )
    server = uvicorn.Server(config)
    anyio.run(_serve, server, settings)
    return 0


async def _serve(server: uvicorn.Server, settings: Settings) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(_announce, server, settings)
        await server.serve()
        tg.cancel_scope.cancel()


async def _announce(server: uvicorn.Server, settings: Settings) -> None:
    while not server.started:
        await anyio.sleep(0.02)
    print(f"vocero listening on http://{settings.host}:{settings.port}", flush=True)
    sys.stdout.flush()
