"""Finding 2: a deeply nested payload is ``INVALID_PAYLOAD``, never an internal error.

The attack: a ``session.update_requested.v1`` whose ``preferences.x`` nests 10,000 objects (a
60 KB frame, under the 64 KiB limit). The decoder recursed until ``RecursionError``: the client
got ``error.v1 INTERNAL`` and close 1011, and the log ~700 lines per frame. The same frame is
sent here on a live session, and the session must answer ``INVALID_PAYLOAD`` and keep working.
"""

from __future__ import annotations

import time

import pytest
from starlette.testclient import TestClient

from tests.security.support import frame, nested
from tests.support.wsclient import ProtocolClient
from vocero.contracts import codec
from vocero.contracts.errors import ErrorCode, ProtocolError


def _update_with(pc: ProtocolClient, preferences_json: str) -> None:
    pc.sequence += 1
    text = frame("session.update_requested.v1", {"preferences": "@"}, sequence=pc.sequence,
                 session_id=pc.session_id).replace('"@"', preferences_json)
    pc.ws.send_text(text)


def test_ten_thousand_nested_objects_are_refused_and_the_session_keeps_working(
    client: TestClient,
) -> None:
    with client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect()
        for _ in range(3):
            _update_with(pc, '{"locale": "en-GB", "x": ' + nested(10_000) + "}")
            error = pc.expect("error.v1")["data"]["payload"]
            assert (error["code"], error["category"]) == ("INVALID_PAYLOAD", "protocol")
        pc.send("input.text.v1", {"text": "hello"})
        assert pc.expect("response.completed.v1")["data"]["payload"]["status"] == "completed"
        assert pc.of_type("session.configuration_applied.v1")[-1]["effective"]["locale"] == (
            "en-US"
        ), "nothing of a refused frame applies"
    assert client.get("/healthz").status_code == 200


def _update_frame(depth_of_payload: int) -> str:
    # the payload object is level 1, preferences level 2, x's objects the rest
    x = nested(depth_of_payload - 2)
    return frame("session.update_requested.v1", {"preferences": "@"}, sequence=2,
                 session_id="ses_1").replace('"@"', '{"x": ' + x + "}")


def test_the_limit_is_thirty_two_levels_of_payload() -> None:
    assert codec.MAX_PAYLOAD_DEPTH == 32
    assert isinstance(codec.decode_client(_update_frame(32)).data.payload.preferences, object)
    with pytest.raises(ProtocolError) as refused:
        codec.decode_client(_update_frame(33))
    assert refused.value.code is ErrorCode.INVALID_PAYLOAD


def test_brackets_inside_strings_do_not_count() -> None:
    text = '"' + "{[" * 20_000 + '\\"' + '"'
    decoded = codec.decode_client(
        frame("input.text.v1", {"text": "@"}, sequence=1).replace('"@"', text)
    )
    assert decoded.data.payload.text.startswith("{[{[")  # type: ignore[union-attr]


def test_refusing_a_deep_frame_costs_milliseconds_not_the_event_loop() -> None:
    """Ten such frames stalled ``/healthz`` to 722 ms: the refusal is a linear scan."""
    deep = _update_frame(12_000)
    started = time.perf_counter()
    for _ in range(10):
        with pytest.raises(ProtocolError):
            codec.decode_client(deep)
    assert time.perf_counter() - started < 0.5
