"""Finding 9: one address cannot hold a pile of connections that never authenticate.

The attack: 200 sockets from one address opened ``/v1/realtime`` and never sent
``session.connect.v1``; each was held for the whole 10 s connect timeout. Here an address opens
sockets without connecting until the limit; the next upgrade is refused with HTTP 429 before it
is accepted, and a socket that authenticates (or goes away) gives its place back.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import anyio
import pytest
from starlette.testclient import TestClient, WebSocketDenialResponse

from tests.security.support import settings
from tests.support.wsclient import ProtocolClient
from vocero.app.server import create_app


@pytest.mark.process
def test_pending_connections_of_one_address_are_capped(tmp_path: Path) -> None:
    limit = 4
    chosen = replace(settings(tmp_path), max_pending_per_address=limit)
    with TestClient(create_app(chosen)) as client, ExitStack() as stack:
        idle = [stack.enter_context(client.websocket_connect("/v1/realtime"))
                for _ in range(limit)]  # fmt: skip
        with pytest.raises(WebSocketDenialResponse) as refused:
            client.websocket_connect("/v1/realtime").__enter__()
        assert refused.value.status_code == 429
        ProtocolClient(idle[0]).connect()  # authenticated: no longer pending
        with client.websocket_connect("/v1/realtime") as ws:
            ProtocolClient(ws).connect()
        assert client.get("/healthz").status_code == 200


@pytest.mark.process
def test_a_socket_that_leaves_gives_its_place_back(tmp_path: Path) -> None:
    chosen = replace(settings(tmp_path), max_pending_per_address=1)
    with TestClient(create_app(chosen)) as client:
        for _ in range(3):
            with client.websocket_connect("/v1/realtime") as ws:
                ws.close()
        with client.websocket_connect("/v1/realtime") as ws:
            ProtocolClient(ws).connect()


def test_the_count_is_per_address() -> None:
    from vocero.relay.limits import PendingConnections

    pending = PendingConnections(2)
    assert pending.enter("10.0.0.1") and pending.enter("10.0.0.1")
    assert not pending.enter("10.0.0.1")
    assert pending.enter("10.0.0.2")
    pending.leave("10.0.0.1")
    assert pending.enter("10.0.0.1")
    for _ in range(5):
        pending.leave("10.0.0.2")
    assert pending.held("10.0.0.2") == 0


@pytest.mark.anyio
async def test_the_default_is_configurable_from_the_command_line() -> None:
    import argparse

    from vocero.app.settings import add_serve_arguments, settings_from

    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    assert settings_from(parser.parse_args([])).max_pending_per_address == 32
    args = parser.parse_args(["--max-pending-per-address", "3"])
    assert settings_from(args).max_pending_per_address == 3
    await anyio.lowlevel.checkpoint()
