"""Finding 7 (first part): a socket that never connects is told why before it is closed.

The attack: open ``/v1/realtime`` and send nothing. After the connect timeout the server closed
with 4400 but without the ``error.v1 CONNECT_REQUIRED`` the protocol promises. The timeout is
shortened here (the rule, not the 10 s, is under test) and the socket waits for the server.
"""

from __future__ import annotations

from dataclasses import replace

from starlette.testclient import TestClient

from tests.support.wsclient import ProtocolClient
from vocero.relay.limits import Limits


def test_silence_gets_connect_required_then_4400(client: TestClient) -> None:
    relay = client.app.state.relay  # type: ignore[attr-defined]
    relay.limits = replace(Limits(), connect_timeout_s=0.2)
    assert Limits().connect_timeout_s == 10.0
    with client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        error = pc.expect("error.v1")["data"]["payload"]
        assert (error["code"], error["category"]) == ("CONNECT_REQUIRED", "protocol")
        assert pc.expect_close() == 4400
