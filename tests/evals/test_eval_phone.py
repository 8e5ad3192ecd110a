"""``vocero eval --transport twilio`` (docs/eval.md "Over the phone") on the sim runners: each
scenario rings a real ``vocero serve`` (signed webhook, ticket, μ-law media stream, marks echoed
in real time) and is judged from the records. A lookup and a write confirmed with key 1 pass,
the write reaching the MCP tap exactly once; a barge-in gets ``clear`` and nothing stale after
it; a changed expectation fails (exit 1); text mode and a caller without a phone are refused
(exit 2). The caller's voice is a tone (the sim STT returns the script's lines; Piper is not
what is tested here)."""

from __future__ import annotations

import argparse
import base64
import json
import math
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from twilio.request_validator import RequestValidator

from vocero.evals.client import TurnResult
from vocero.evals.command import eval_command
from vocero.evals.expect import check_stopped
from vocero.evals.format import load_files
from vocero.evals.options import add_eval_arguments
from vocero.evals.phone import (
    Carrier,
    PhoneCaller,
    phone_unchecked,
    to_ulaw,
    twilio_signature,
)

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = Path(__file__).parent / "phone"


class FakeVoice:
    """A caller whose every line is 400 ms of a 300 Hz tone (speech to the sim VAD)."""

    def speak(self, text: str, *, pause_after_words: int = 0, pause_ms: int = 0,
              noise_db: float | None = None) -> bytes:
        t = np.arange(16_000 * 400 // 1000) / 16_000
        return (0.3 * np.sin(2 * math.pi * 300.0 * t) * 32767).astype("<i2").tobytes()


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_eval_arguments(parser)
    args = parser.parse_args([*argv, "--runners", "sim",
                              "--profiles", str(REPO / "fixtures/profiles"),
                              "--identities", str(REPO / "fixtures/identities.yaml")])
    return args


def _run(*argv: str) -> int:
    return eval_command(_args(*argv), voice=FakeVoice())  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_scenarios_pass_over_the_phone(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "report"
    assert _run(str(SCENARIOS), "--transport", "twilio", "--report", str(report)) == 0
    out = capsys.readouterr().out
    assert "PASS phone/phone-lookup-and-write" in out and "PASS barge/phone-barge-in" in out, out
    data = yaml.safe_load((report / "report.json").read_text())
    assert (data["transport"], data["mode"]) == ("twilio", "audio")
    results = {s["name"]: s for s in data["scenarios"]}
    write = results["phone-lookup-and-write"]
    # The tap saw the lookup and the confirmed write exactly once (the scenario says so too).
    tools = [t["tool"] for t in write["tools"]]
    assert tools.count("reschedule_appointment") == 1 and tools.count("get_order_status") == 1
    assert "shipped" in write["turns"][0]["heard_text"], write["turns"][0]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_changed_expectation_fails_over_the_phone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(SCENARIOS, tmp_path / "phone")
    file = tmp_path / "phone" / "phone.yaml"
    text = file.read_text()
    assert "arguments: {order_id: A123}, times: 1" in text
    file.write_text(text.replace("arguments: {order_id: A123}, times: 1",
                                 "arguments: {order_id: A999}, times: 1"))
    (tmp_path / "phone" / "barge.yaml").unlink()
    assert _run(str(tmp_path / "phone"), "--transport", "twilio") == 1
    out = capsys.readouterr().out
    assert "FAIL phone/phone-lookup-and-write turn 1: tools get_order_status" in out, out
    assert "happened: 1 call with {order_id: A123}" in out, out


def test_text_mode_has_no_phone_equivalent(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(str(SCENARIOS), "--transport", "twilio", "--mode", "text") == 2
    assert "--transport twilio carries audio only" in capsys.readouterr().err


def test_a_caller_without_a_phone_is_malformed(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    identities = yaml.safe_load((REPO / "fixtures/identities.yaml").read_text())
    for caller in identities["callers"]:
        caller.pop("phone", None)
    (tmp_path / "identities.yaml").write_text(yaml.safe_dump(identities))
    args = _args(str(SCENARIOS), "--transport", "twilio")
    args.identities = str(tmp_path / "identities.yaml")
    assert eval_command(args) == 2
    assert "has no phone" in capsys.readouterr().err


def test_the_signature_is_twilios() -> None:
    params = {"CallSid": "CA1", "From": "+34600000001", "To": "+1", "AccountSid": "AC1",
              "Digits": "1 2"}
    url = "http://127.0.0.1:8123/v1/telephony/twilio/voice"
    assert twilio_signature("s3cret", url, params) == RequestValidator(
        "s3cret").compute_signature(url, params)


def test_the_callers_audio_is_8khz_mulaw() -> None:
    pcm = FakeVoice().speak("x")  # 400 ms at 16 kHz
    ulaw = to_ulaw(pcm)
    assert len(ulaw) == 3200  # 400 ms at 8 kHz, one byte a sample
    assert len(set(ulaw)) > 10  # a tone, not silence


def test_a_confirmation_field_only_the_websocket_carries_is_reported(tmp_path: Path) -> None:
    file = tmp_path / "s.yaml"
    file.write_text(yaml.safe_dump({"caller": "demo-token", "scenarios": [{
        "name": "fields", "turns": [{"say": "move it", "expect": {"confirmation": {
            "tool": "appointments.reschedule", "fields": {"contains": "10:30"}}}}]}]}))
    [scenario] = load_files([file])
    assert phone_unchecked(scenario) == [
        "turn 1 confirmation fields (only expires_at, proposal_id, revision, summary, tool "
        "are on record)"]


class FakeStream:
    """The media stream's socket, without a server: what the carrier sent is kept."""

    def __init__(self) -> None:
        self.sent: list[dict[str, object]] = []

    def send(self, text: str) -> None:
        self.sent.append(json.loads(text))

    def close(self) -> None:
        pass


class FakeRecords:
    base = "http://127.0.0.1:9"

    def get(self, route: str, **params: str) -> list[dict[str, object]]:
        return []

    def get_json(self, route: str, **params: str) -> dict[str, object]:
        return {}


def _media(ms: int) -> dict[str, object]:
    return {"event": "media", "media": {"payload": base64.b64encode(b"\xff" * 8 * ms).decode()}}


def test_media_of_a_stopped_generation_after_the_clear_fails_stopped() -> None:
    """The phone's ``stopped``: a frame that the next mark says belongs to the generation the
    ``clear`` stopped is stale; one before the clear is not. Marks dropped by the clear are
    echoed at once (as Twilio does)."""
    socket = FakeStream()
    carrier = Carrier(socket, "CA1")  # type: ignore[arg-type]
    caller = PhoneCaller(FakeRecords(), public_url="", auth_token="", phone="", timeout_s=1,
                         voice=None)
    caller.carrier = carrier
    turn = TurnResult(index=1, sent_at=time.time() - 1)
    turn.barged_at = time.time()
    for message in (_media(20), {"event": "mark", "mark": {"name": "gen_a@20ms#1"}},
                    _media(20), {"event": "mark", "mark": {"name": "gen_a@40ms#2"}},
                    {"event": "clear"}):
        carrier._keep(message)
    echoed = [m["mark"]["name"] for m in socket.sent if m["event"] == "mark"]  # type: ignore[index]
    assert "gen_a@40ms#2" in echoed  # returned by the clear, never played
    turn.ended_at = time.time() + 1
    caller._read_media(turn, barge_ended=0.0)
    assert turn.stops == [{"generation_id": "gen_a", "reason": "clear"}]
    assert check_stopped(True, turn) == []  # nothing after the clear yet
    carrier._keep(_media(20))
    carrier._keep({"event": "mark", "mark": {"name": "gen_a@60ms#3"}})
    stale = TurnResult(index=1, sent_at=turn.sent_at, barged_at=turn.barged_at,
                       ended_at=time.time() + 1)
    caller._read_media(stale, barge_ended=0.0)
    [failure] = check_stopped(True, stale)
    assert failure.expected == "nothing of the generation after output.stop_and_flush.v1"
    assert failure.happened == "2 delta(s) after it"  # the frame and its mark


def test_a_confirm_button_with_no_read_back_asked_presses_nothing() -> None:
    """The phone ignores a key with no question pending, so no answer would come: the turn
    ends at once with the reason, instead of waiting out its timeout."""
    socket = FakeStream()
    caller = PhoneCaller(FakeRecords(), public_url="", auth_token="", phone="", timeout_s=60,
                         voice=None)
    caller.carrier = Carrier(socket, "CA2")  # type: ignore[arg-type]
    started = time.monotonic()
    turn = caller.say(TurnResult(index=1), text=None, confirm="confirm", barge_in_after_ms=None,
                      then=None, pause=(0, 0), noise_db=None)
    assert time.monotonic() - started < 5 and not turn.timed_out
    assert [e["code"] for e in turn.errors] == ["no_confirmation_asked"]
    assert not [m for m in socket.sent if m["event"] == "dtmf"]
