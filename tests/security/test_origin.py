"""Finding 4: a browser page of another origin cannot open ``/v1/realtime``.

The attack: an upgrade carrying ``Origin: http://evil.example`` (or ``Origin: null``, what a
sandboxed page sends) got 101 and a session: any web page the user visited could drive a local
Vocero with the public demo token. Here the same upgrades are refused with HTTP 403, while the
server's own origin (the browser client at ``/``) and clients without ``Origin`` connect.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from starlette.testclient import TestClient, WebSocketDenialResponse

from tests.security.support import settings
from tests.support.wsclient import ProtocolClient
from vocero.app.server import create_app
from vocero.app.settings import add_serve_arguments, settings_from


def _upgrade(client: TestClient, origin: str | None) -> int:
    """The HTTP status of the upgrade (101 when a session could be opened on it)."""
    headers = {} if origin is None else {"origin": origin}
    try:
        with client.websocket_connect("/v1/realtime", headers=headers) as ws:
            ProtocolClient(ws).connect()
            return 101
    except WebSocketDenialResponse as refused:
        return refused.status_code


@pytest.mark.process
def test_the_default_allows_only_the_servers_own_origin(client: TestClient) -> None:
    statuses = {
        origin: _upgrade(client, origin)
        for origin in (
            "http://evil.example",
            "null",
            "http://127.0.0.1:8766",  # another port is another origin
            "http://127.0.0.1.evil.example:8765",
            "http://127.0.0.1:8765",  # the server's own origin (default --host/--port)
            "http://localhost:8765",
            None,  # not a browser
        )
    }
    assert statuses == {
        "http://evil.example": 403,
        "null": 403,
        "http://127.0.0.1:8766": 403,
        "http://127.0.0.1.evil.example:8765": 403,
        "http://127.0.0.1:8765": 101,
        "http://localhost:8765": 101,
        None: 101,
    }


@pytest.mark.process
def test_allowed_origins_replace_the_default(tmp_path: Path) -> None:
    chosen = replace(settings(tmp_path), allowed_origins="https://app.example, null")
    with TestClient(create_app(chosen)) as client:
        assert _upgrade(client, "https://app.example") == 101
        assert _upgrade(client, "HTTPS://APP.EXAMPLE:443") == 101
        assert _upgrade(client, "null") == 101
        assert _upgrade(client, "http://127.0.0.1:8765") == 403
        assert _upgrade(client, "http://evil.example") == 403


def test_the_flag_and_its_environment_twin(monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from vocero.relay.origins import OriginPolicy

    def parsed(*argv: str) -> str:
        parser = argparse.ArgumentParser()
        add_serve_arguments(parser)
        return settings_from(parser.parse_args(argv)).allowed_origins

    assert parsed() == ""
    assert parsed("--allowed-origins", "https://a.example") == "https://a.example"
    monkeypatch.setenv("VOCERO_ALLOWED_ORIGINS", "*")
    assert parsed() == "*"
    assert OriginPolicy.parse("*", host="127.0.0.1", port=1).allows("http://evil.example")


def test_a_server_bound_to_every_interface_allows_the_origin_of_its_own_host() -> None:
    from vocero.relay.origins import OriginPolicy

    policy = OriginPolicy.parse("", host="0.0.0.0", port=8765)
    assert policy.allows("http://10.1.2.3:8765", "10.1.2.3:8765")
    assert not policy.allows("http://evil.example", "10.1.2.3:8765")
    assert not policy.allows("http://evil.example:8765", "10.1.2.3:8765")
