"""Callers on the phone (SPEC §10): Twilio's media stream served as an ordinary session."""

from __future__ import annotations

import base64
from pathlib import Path

from tests.telephony.phone_support import phone_app


def test_a_lookup_answered_over_the_phone(tmp_path: Path) -> None:
    with phone_app(tmp_path, ["what is entry E42"]) as phone, phone.call() as carrier:
        carrier.say()
        lines = phone.wait_heard(carrier.call_sid, r"Entry E42 is settled")
        assert lines == ["Entry E42 is settled."]
        media = carrier.of("media")
        assert media and all(m["streamSid"] == carrier.stream_sid for m in media)
        assert all(len(base64.b64decode(m["media"]["payload"])) == 160 for m in media)
        events = carrier.events()
        assert events[-1] == "mark"  # the unit's audio ends with its mark
        assert carrier.audio_ms() >= len("Entry E42 is settled.") * 10
        session = phone.session_of(carrier.call_sid)
        assert session["channel"] == "twilio" and session["call_sid"] == carrier.call_sid
        assert phone.gateway.calls("ledger.lookup")[0].arguments == {"entry_id": "E42"}
