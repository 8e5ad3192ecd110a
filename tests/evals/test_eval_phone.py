"""``vocero eval --transport twilio`` (docs/eval.md "Over the phone") on the sim runners: each
scenario rings a real ``vocero serve`` (signed webhook, ticket, μ-law media stream, marks echoed
in real time) and is judged from the records. A lookup and a write confirmed with key 1 pass,
the write reaching the MCP tap exactly once; a barge-in gets ``clear`` and nothing stale after
it; a changed expectation fails (exit 1); text mode and a caller without a phone are refused
(exit 2). The caller's voice is a tone (the sim STT returns the script's lines; Piper is not
what is tested here)."""

from __future__ import annotations

import argparse
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from twilio.request_validator import RequestValidator

from vocero.evals.command import eval_command
from vocero.evals.format import load_files
from vocero.evals.options import add_eval_arguments
from vocero.evals.phone import phone_unchecked, to_ulaw, twilio_signature

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
    results = {s["name"]: s for s in yaml.safe_load((report / "report.json").read_text())[
        "scenarios"]}
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
