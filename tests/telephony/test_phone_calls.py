"""Callers on the phone (SPEC §10): Twilio's media stream served as an ordinary session."""

from __future__ import annotations

import base64
from pathlib import Path

from tests.telephony.phone_support import LONG_REPLY, MS_PER_CHAR, phone_app


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


READBACK = r"To confirm: .*E42.*closed.*Say yes or press 1\."
AFTER = r"^I can help with the ledger\.$"
"""The agent's line once the change ran (the sim's catch-all rule)."""


def test_a_change_confirmed_by_voice_reaches_the_server_once(tmp_path: Path) -> None:
    stt = ["amend entry E42 to closed", "yes"]
    with phone_app(tmp_path, stt) as phone, phone.call() as carrier:
        carrier.say()
        phone.wait_heard(carrier.call_sid, READBACK)  # every value of it played (marks)
        assert phone.writes() == []
        carrier.say()
        phone.wait_heard(carrier.call_sid, AFTER)
        assert [w.arguments for w in phone.writes()] == [{"entry_id": "E42", "state": "closed"}]


def test_a_change_confirmed_with_key_1_and_the_hang_up_after_it(tmp_path: Path) -> None:
    with phone_app(tmp_path, ["amend entry E42 to closed"]) as phone:
        with phone.call() as carrier:
            carrier.say()
            phone.wait_heard(carrier.call_sid, READBACK)
            carrier.dtmf("5")  # not an answer: ignored
            carrier.dtmf("1")
            phone.wait_heard(carrier.call_sid, AFTER)
            assert len(phone.writes()) == 1
            carrier.hang_up()
            carrier.wait_closed()
        session = phone.session_of(carrier.call_sid)
        assert session["closed_at"] is not None
        caller_lines = [h["text"] for h in session["history"] if h["role"] == "user"]
        assert caller_lines == ["amend entry E42 to closed", "[keypad: yes]"]
        operations = phone.get(f"/v1/operations?session_id={session['session_id']}")["items"]
        assert [op["status"] for op in operations] == ["committed"]  # nothing undone
        assert len(phone.writes()) == 1
        runtime = phone.client.app.state.runtime  # type: ignore[attr-defined]
        assert phone.client.portal is not None
        record = phone.client.portal.call(runtime.conversations.get_session, session["session_id"])
        assert record.resume_token_hash  # ended like a dropped connection: resumable


def test_key_1_before_the_read_back_was_heard_is_not_consent(tmp_path: Path) -> None:
    with phone_app(tmp_path, ["amend entry E42 to closed"]) as phone, phone.call() as carrier:
        carrier.hold_marks = True  # the caller has heard nothing yet
        carrier.say()
        carrier.wait("the read-back's audio", lambda: len(carrier.of("mark")) >= 2)
        carrier.dtmf("1")
        carrier.wait("the clear of the cut read-back", lambda: carrier.of("clear"))
        carrier.release_marks()
        lines = phone.wait_heard(carrier.call_sid, r"^Let me finish first\. " + READBACK)
        assert phone.writes() == []  # the early key confirmed nothing
        assert not any(line == "I can help with the ledger." for line in lines)
        carrier.dtmf("1")  # now every value was heard
        phone.wait_heard(carrier.call_sid, AFTER)
        assert len(phone.writes()) == 1


def test_key_2_rejects_and_nothing_is_written(tmp_path: Path) -> None:
    with phone_app(tmp_path, ["amend entry E42 to closed"]) as phone, phone.call() as carrier:
        carrier.say()
        phone.wait_heard(carrier.call_sid, READBACK)
        carrier.dtmf("2")
        phone.wait_heard(carrier.call_sid, r"haven't changed anything")
        assert phone.writes() == []


def mark_ms(name: str) -> tuple[str, int]:
    """(generation, played ms) a mark of ours stands for: ``gen_…@1234ms#7``."""
    generation, _, rest = name.partition("@")
    return generation, int(rest.split("ms#", 1)[0])


def test_barge_in_clears_first_and_heard_text_stops_at_the_last_echoed_mark(
    tmp_path: Path,
) -> None:
    stt = ["tell me about the harbour", "what is entry E42"]
    with phone_app(tmp_path, stt) as phone, phone.call() as carrier:
        carrier.echo_limit = 2  # the caller hears the first two marks' audio, then talks
        carrier.say()
        carrier.wait("audio sent ahead of what was heard", lambda: len(carrier.of("mark")) >= 4)
        speaking = carrier.of("mark")[0]["mark"]["name"]
        stopped, _ = mark_ms(speaking)
        sent_before = len(carrier.received)
        carrier.say()  # the caller speaks over the agent
        carrier.wait("the clear", lambda: carrier.of("clear"))
        phone.wait_heard(carrier.call_sid, r"Entry E42 is settled")
        after_speech = carrier.received[sent_before:]
        clear_at = next(i for i, m in enumerate(after_speech) if m["event"] == "clear")
        later = after_speech[clear_at + 1 :]
        # nothing of the stopped generation after the clear: every frame sent later belongs to
        # the answer that follows (its marks name it)
        later_marks = [mark_ms(m["mark"]["name"])[0] for m in later if m["event"] == "mark"]
        assert later_marks and stopped not in later_marks
        assert later[-1]["event"] == "mark"
        # heard text is cut at the last mark echoed before the clear; the marks Twilio returns
        # after a clear (the dropped audio) do not count
        echoed_ms = max(mark_ms(n)[1] for n in carrier.echoed_before_clear)
        sent_ms = max(mark_ms(m["mark"]["name"])[1] for m in carrier.of("mark")
                      if mark_ms(m["mark"]["name"])[0] == stopped)
        assert set(carrier.echoed) > set(carrier.echoed_before_clear)  # returned after clear
        assert sent_ms > echoed_ms + 200
        # paced: never more than max_lead_ms (400) ahead of the last echoed mark (a unit's
        # last frame is padded to 20 ms)
        assert sent_ms <= echoed_ms + 400 + 20, (sent_ms, echoed_ms)
        assert sent_ms < len(LONG_REPLY) * MS_PER_CHAR / 2  # far from the whole answer
        history = phone.session_of(carrier.call_sid)["history"]
        cut = next(h for h in history if h["generation_id"] == stopped)
        assert cut["status"] == "interrupted"
        assert cut["text"] and LONG_REPLY.startswith(cut["text"].rstrip("."))
        assert len(cut["text"]) * MS_PER_CHAR <= echoed_ms + 120  # a word's slack, no more
        assert len(cut["text"]) * MS_PER_CHAR < sent_ms - 200
