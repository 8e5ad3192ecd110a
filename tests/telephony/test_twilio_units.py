"""Twilio's side as data: the signature as Twilio's own library computes it, the stream
messages, the TwiML, and the tickets (sans-IO)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from twilio.request_validator import RequestValidator

from vocero.contracts.domain import Caller
from vocero.relay.telephony import twilio
from vocero.relay.telephony.carrier import Connected, Key, MarkEchoed, Media, Start, Stop
from vocero.relay.telephony.config import phone_ref
from vocero.relay.telephony.stream import MarkBook
from vocero.relay.telephony.tickets import TicketBook, TicketRefused

TOKEN = "12345678901234567890123456789012"
URL = "https://voice.example.test/v1/telephony/twilio/voice"
PARAMS = {"CallSid": "CA1", "AccountSid": "AC1", "From": "+15550100777", "To": "+15550100000",
          "Caller": "+15550100777", "Digits": "1234"}


@pytest.mark.parametrize("url", [URL, URL + "?tenant=harbour&x=1"])
def test_signature_is_twilios_own(url: str) -> None:
    expected = RequestValidator(TOKEN).compute_signature(url, PARAMS)
    assert twilio.signature(TOKEN, url, PARAMS.items()) == expected
    assert twilio.signature_valid(TOKEN, url, list(PARAMS.items()), expected)
    assert RequestValidator(TOKEN).validate(url, PARAMS, twilio.signature(TOKEN, url,
                                                                          PARAMS.items()))


def test_a_changed_parameter_url_or_token_does_not_verify() -> None:
    good = twilio.signature(TOKEN, URL, PARAMS.items())
    assert not twilio.signature_valid(TOKEN, URL, {**PARAMS, "From": "+1"}.items(), good)
    assert not twilio.signature_valid(TOKEN, URL + "x", PARAMS.items(), good)
    assert not twilio.signature_valid("another-token", URL, PARAMS.items(), good)
    assert not twilio.signature_valid(TOKEN, URL, PARAMS.items(), "")


def test_stream_messages_parse_into_carrier_events() -> None:
    stream = twilio.TwilioStream()
    start = {"event": "start", "sequenceNumber": "1", "streamSid": "MZ1", "start": {
        "accountSid": "AC1", "streamSid": "MZ1", "callSid": "CA1", "tracks": ["inbound"],
        "customParameters": {"ticket": "t-1"},
        "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}}}
    assert stream.parse(json.dumps({"event": "connected", "protocol": "Call"})) == Connected()
    assert stream.parse(json.dumps(start)) == Start(
        stream_sid="MZ1", call_sid="CA1", parameters={"ticket": "t-1"},
        encoding="audio/x-mulaw", sample_rate=8000, channels=1)
    media = {"event": "media", "streamSid": "MZ1", "media": {
        "track": "inbound", "chunk": "2", "timestamp": "20", "payload": "//8A"}}
    assert stream.parse(json.dumps(media)) == Media(b"\xff\xff\x00")
    assert stream.parse(json.dumps({"event": "dtmf", "dtmf": {"digit": "1"}})) == Key("1")
    assert stream.parse(json.dumps({"event": "mark", "mark": {"name": "m"}})) == MarkEchoed("m")
    assert stream.parse(json.dumps({"event": "stop", "stop": {"callSid": "CA1"}})) == Stop()
    for junk in ("{", "[]", '{"event": "unknown"}', '{"event": "media", "media": {"payload":'
                 ' "%%%"}}'):
        assert stream.parse(junk) is None


def test_outbound_messages_are_twilios() -> None:
    stream = twilio.TwilioStream()
    assert json.loads(stream.media("MZ1", b"\xff\x00")) == {
        "event": "media", "streamSid": "MZ1", "media": {"payload": "/wA="}}
    assert json.loads(stream.mark("MZ1", "g@20ms#1")) == {
        "event": "mark", "streamSid": "MZ1", "mark": {"name": "g@20ms#1"}}
    assert json.loads(stream.clear("MZ1")) == {"event": "clear", "streamSid": "MZ1"}


def test_twiml_connects_with_the_ticket_or_refuses() -> None:
    connect = ET.fromstring(twilio.connect_twiml("wss://h/v1/telephony/twilio", {"ticket": "t"}))
    stream = connect.find("./Connect/Stream")
    assert stream is not None and stream.attrib == {"url": "wss://h/v1/telephony/twilio"}
    assert [(p.attrib["name"], p.attrib["value"]) for p in stream] == [("ticket", "t")]
    refusal = ET.fromstring(twilio.refusal_twiml())
    assert [c.tag for c in refusal] == ["Say", "Hangup"]


CALLER = Caller(token="tok-harbour", subject="s", tenant="harbourline", phone="+15550100777")


def test_a_ticket_is_good_once_for_its_call_within_30_s() -> None:
    now = [100.0]
    book = TicketBook(lambda: now[0])
    ticket = book.issue("CA1", CALLER)
    assert book.redeem(ticket, "CA1") is CALLER
    with pytest.raises(TicketRefused, match="ticket_reused"):
        book.redeem(ticket, "CA1")
    other = book.issue("CA2", CALLER)
    with pytest.raises(TicketRefused, match="ticket_other_call"):
        book.redeem(other, "CA3")
    late = book.issue("CA4", CALLER)
    now[0] += 30.0
    with pytest.raises(TicketRefused, match="ticket_expired"):
        book.redeem(late, "CA4")
    forgotten = book.issue("CA5", CALLER)
    now[0] += 31.0
    book.issue("CA6", CALLER)  # forgets the expired one
    with pytest.raises(TicketRefused, match="ticket_expired"):
        book.redeem(forgotten, "CA5")
    for missing, reason in (("", "ticket_missing"), ("nope", "ticket_unknown")):
        with pytest.raises(TicketRefused, match=reason):
            book.redeem(missing, "CA1")


def test_marks_sent_before_a_clear_stand_for_nothing() -> None:
    marks = MarkBook()
    first = marks.name("gen_a", 200)
    second = marks.name("gen_a", 400)
    assert marks.echoed(first) == ("gen_a", 200)
    marks.clear()
    assert marks.echoed(second) is None
    assert marks.echoed("gen_a@999ms#9") is None  # not one of ours


def test_phone_refs_hide_the_number() -> None:
    ref = phone_ref("+15550100777")
    assert ref.startswith("tel_") and "5550100777" not in ref
    assert ref == phone_ref("+1 555-010-0777")


def test_the_auth_token_flag_is_a_secret_and_print_config_redacts_it() -> None:
    import argparse

    from vocero.app.commands.print_config import effective_config
    from vocero.app.settings import add_serve_arguments, settings_from

    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    argv = ["--twilio-auth-token", TOKEN, "--public-url", "https://voice.example.test"]
    settings = settings_from(parser.parse_args(argv))
    assert settings.twilio_auth_token.reveal() == TOKEN
    assert TOKEN not in repr(settings)
    shown = effective_config(settings, argv)
    assert shown["twilio_auth_token"] == {"value": "[redacted]", "source": "flag"}
    assert shown["public_url"]["value"] == "https://voice.example.test"
    assert TOKEN not in json.dumps(shown, default=str)


def test_only_a_phone_read_back_says_how_to_answer_with_a_key() -> None:
    from vocero.policy.readback import readback

    arguments = {"entry_id": "E42", "state": "closed"}
    web = readback("amend_entry", arguments)
    phone = readback("amend_entry", arguments, keypad=True)
    assert not web.text.endswith("press 1.") and "press" not in web.text
    assert phone.text == f"{web.text} Say yes or press 1."
    assert phone.parts == web.parts  # the values a "yes" needs heard are the same
