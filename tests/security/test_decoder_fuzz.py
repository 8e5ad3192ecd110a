"""Finding 2, generalised: no client input produces ``INTERNAL`` or close 1011.

Hypothesis writes client frames (deep nesting, huge and odd numbers, odd unicode, lone
surrogates, every field of every client event given values of every JSON type, broken text)
and checks that the decoder only ever answers with a documented protocol code, and that a live
session fed such frames never answers ``INTERNAL`` nor closes with 1011.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any, get_args, get_type_hints

import msgspec
import msgspec.inspect as mi
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from tests.security import support
from tests.support.wsclient import ProtocolClient
from vocero.app.server import create_app
from vocero.contracts import codec
from vocero.contracts import events as ev
from vocero.contracts.errors import ErrorCode, ProtocolError
from vocero.relay.sanitize import sanitize

DOCUMENTED = {ErrorCode.MALFORMED_EVENT, ErrorCode.UNKNOWN_EVENT, ErrorCode.INVALID_PAYLOAD}
"""What the decoder may answer (SPEC §2); the relay adds the envelope and limit codes."""
PAYLOADS: dict[str, type[Any]] = {
    ev.event_type(cls): get_args(get_type_hints(cls)["data"])[0] for cls in ev.CLIENT_EVENT_TYPES
}
RAW_NUMBERS = ["1e400", "-1e400", "1" + "0" * 400, "-" + "9" * 40, "1.5e-400", "-0", "2e308",
               "NaN", "Infinity", "0x10", "01", "1.", ".5", "9223372036854775808"]  # fmt: skip
ODD_STRINGS = ['"\\ud800"', '"\\udc00x"', '"\\u0000"', '"\\ud83d\\ude00"', '"\u202e\u0301"',
               '"\\uffff"', '"' + "\U0010ffff" * 3 + '"', '"\\x41"', '"\\',
               '"unterminated']  # fmt: skip


def _raw(text: str) -> str:
    return "\x00RAW" + text + "\x00"


def _to_json(value: Any) -> str:
    """JSON text of ``value``; strings marked by :func:`_raw` are pasted as they are."""
    text = json.dumps(value, ensure_ascii=False)
    return text.replace('"\\u0000RAW', "").replace('\\u0000"', "")


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**62, max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | st.sampled_from(RAW_NUMBERS + ODD_STRINGS).map(_raw)
)
deep = st.integers(min_value=20, max_value=3_000).map(
    lambda n: _raw("[" * n + "]" * n) if n % 2 else _raw('{"a":' * n + "1" + "}" * n)
)
json_values = st.recursive(
    scalars | deep,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def typed(t: mi.Type) -> st.SearchStrategy[Any]:
    """Values of the field's own type (mostly valid), or of any JSON type."""
    own: st.SearchStrategy[Any]
    match t:
        case mi.StrType():
            own = st.text(max_size=40)
        case mi.IntType():
            own = st.integers() | st.integers(min_value=2**63 - 2, max_value=2**70)
        case mi.BoolType():
            own = st.booleans()
        case mi.BytesType():
            own = st.binary(max_size=64).map(lambda b: base64.b64encode(b).decode()) | st.text()
        case mi.LiteralType():
            own = st.sampled_from(list(t.values))
        case mi.StructType():
            own = st.fixed_dictionaries(
                {}, optional={f.encode_name: typed(f.type) for f in t.fields}
            )
        case mi.UnionType():
            own = st.one_of([typed(member) for member in t.types])
        case mi.ListType():
            own = st.lists(typed(t.item_type), max_size=3)
        case _:
            own = json_values
    return own | json_values


@st.composite
def payloads(draw: st.DrawFn, name: str) -> Any:
    fields = mi.type_info(PAYLOADS[name])
    assert isinstance(fields, mi.StructType)
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values)
    return {
        f.encode_name: draw(typed(f.type))
        for f in fields.fields
        if f.required or draw(st.booleans())
    }


SESSION_ID = "ses_placeholder"
SEQUENCE = 4242424242
"""Placeholders a live test replaces with the connection's session id and next sequence."""


@st.composite
def frames(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(sorted(PAYLOADS)) | st.text(max_size=30))
    payload = draw(payloads(name)) if name in PAYLOADS else draw(json_values)
    data: dict[str, Any] = {
        "session_id": draw(st.just(SESSION_ID) | st.text(max_size=10)),
        "sequence": draw(st.just(SEQUENCE) | typed(mi.IntType())),
        "payload": payload,
    }
    envelope: dict[str, Any] = {"specversion": "1.0", "type": name, "id": "evt_1",
                                "time": "2026-01-01T00:00:00Z", "source": "web-client",
                                "data": data}  # fmt: skip
    if draw(st.integers(0, 5)) == 0:
        key = draw(st.sampled_from([*envelope, "extra"]))
        envelope[key] = draw(json_values)
    text = _to_json(envelope)
    if draw(st.integers(0, 7)) == 0:  # a broken edit somewhere in the text
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.text(max_size=5)) + text[at + draw(st.integers(0, 5)) :]
    return text


KNOWN = [
    support.frame("session.update_requested.v1", {"preferences": "@"}, sequence=SEQUENCE,
                  session_id=SESSION_ID).replace('"@"', '{"x": ' + support.nested(10_000) + "}"),
    support.frame("output.playout_progress.v1", {"generation_id": "g", "played_ms": "@"},
                  sequence=SEQUENCE, session_id=SESSION_ID).replace('"@"', "1" + "0" * 400),
    support.frame("tool.confirmation_submitted.v1", {"proposal_id": "p", "revision": "@",
                  "decision": "confirm"}, sequence=SEQUENCE, session_id=SESSION_ID)
    .replace('"@"', "9" * 30),
]  # fmt: skip
"""What the adversarial pass (and this fuzz) found: each one is always tried."""


def _examples(*texts: str) -> Any:
    def apply(test: Any) -> Any:
        for text in texts:
            test = example(text)(test)
        return test

    return apply


def _decode(text: str) -> tuple[ev.ClientEvent | None, ProtocolError | None]:
    try:
        return codec.decode_client(text), None
    except ProtocolError as refused:
        return None, refused


@settings(max_examples=400, deadline=None)
@given(st.one_of(frames(), st.text(max_size=200), st.binary(max_size=200).map(repr)))
@_examples(*KNOWN)
def test_the_decoder_answers_only_documented_codes(text: str) -> None:
    event, refusal = _decode(text)
    if refusal is not None:
        assert refusal.code in DOCUMENTED
        return
    assert event is not None
    payload = event.data.payload
    if isinstance(payload, ev.UpdateRequested):
        sanitize(payload)  # what the relay does next with an update: it never fails either
    msgspec.json.encode(event)  # decoded text is valid UTF-8 (no lone surrogates)


@pytest.mark.process
def test_a_live_session_never_answers_internal(tmp_path: Path) -> None:
    with TestClient(create_app(support.settings(tmp_path))) as client:

        @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
        @given(st.lists(frames(), min_size=1, max_size=6))
        @_examples(*([known] for known in KNOWN))
        def session_fed(sent: list[str]) -> None:
            with client.websocket_connect("/v1/realtime") as ws:
                pc = ProtocolClient(ws)
                pc.connect()
                for text in sent:
                    pc.sequence += 1
                    text = text.replace(SESSION_ID, pc.session_id)
                    ws.send_text(text.replace(str(SEQUENCE), str(pc.sequence)))
                pc.send("session.close.v1")
                try:
                    close = pc.expect_close()
                except WebSocketDisconnect:  # closed while the client was still sending
                    close = pc.close_code or 1000
            codes = [p["code"] for p in pc.of_type("error.v1")]
            assert "INTERNAL" not in codes
            assert close != 1011

        session_fed()
        assert client.get("/healthz").status_code == 200
