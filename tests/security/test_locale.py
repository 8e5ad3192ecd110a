"""Finding 5: ``preferences.locale`` is a supported BCP 47 tag, and the store keeps what applied.

The attack: anything starting with ``en`` was applied and echoed, so a 60 KB locale came back in
every later ``configuration_applied``, and so did one holding a NUL and a ``<script>``. And
after close, ``/v1/sessions/{id}`` showed the configuration the session opened with, not the one
the last update applied. The same updates are sent here on a live session.
"""

from __future__ import annotations

from starlette.testclient import TestClient

from tests.security.support import FIXTURE_ADMIN
from tests.support.wsclient import ProtocolClient

HOSTILE = [
    "en" + "x" * 60_000,
    "en\x00<script>alert(1)</script>",
    "en-US-x-" + "a" * 8 + "-" + "b" * 8 + "-" + "c" * 8 + "-d",  # valid BCP 47, 36 characters
    "en_US",
    "en-",
    "fr-FR",  # well formed, not a language the profile and runners speak
    "i-klingon",
    "",
]


def _update(pc: ProtocolClient, locale: str) -> dict[str, object]:
    pc.send("session.update_requested.v1", {"preferences": {"locale": locale}})
    payload: dict[str, object] = pc.expect("session.configuration_applied.v1")["data"]["payload"]
    return payload


def test_an_unsupported_locale_is_refused_and_never_echoed(client: TestClient) -> None:
    with client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect()
        for locale in HOSTILE:
            applied = _update(pc, locale)
            assert applied["effective"]["locale"] == "en-US", repr(locale[:12])  # type: ignore[index]
            assert applied["rejected_fields"] == [
                {"field": "preferences.locale", "reason": "locale_not_supported"}
            ]
        echoed = {p["effective"]["locale"] for p in pc.of_type("session.configuration_applied.v1")}
        assert echoed == {"en-US"}
        assert not [f for f in pc.frames if "<script>" in str(f) or "x" * 100 in str(f)]


def test_a_supported_tag_applies_in_canonical_form(client: TestClient) -> None:
    cases = [("en-GB", "en-GB"), ("EN-gb", "en-GB"), ("en", "en"), ("en-Latn-US", "en-US"),
             ("eng", "en"), ("en-US", "en-US")]  # fmt: skip
    with client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect()
        for asked, applied in cases:
            result = _update(pc, asked)
            assert result["effective"]["locale"] == applied, asked  # type: ignore[index]
            assert result["rejected_fields"] == []


def test_the_session_record_keeps_the_last_applied_configuration(client: TestClient) -> None:
    with client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect()
        pc.send("session.update_requested.v1",
                {"preferences": {"locale": "en-GB", "turn_mode": "push_to_talk"}})  # fmt: skip
        pc.expect("session.configuration_applied.v1")
        _update(pc, "en-AU")
        pc.send("session.close.v1")
        pc.expect_close()
    record = client.get(f"/v1/sessions/{pc.session_id}", headers=FIXTURE_ADMIN).json()
    assert record["closed_at"] is not None
    assert record["effective"]["locale"] == "en-AU"
    assert record["effective"]["turn_mode"] == "push_to_talk"
