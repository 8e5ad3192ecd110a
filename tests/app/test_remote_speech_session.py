"""A spoken call with STT and TTS on served engines (SPEC §1 "Serving engines"), end to end.

The app is the real composition root with ``--runners cpu`` for VAD, turn judge and LLM, and
``--stt-url``/``--tts-url`` pointing at two :class:`~tests.support.audio_servers.SpeechServer`
instances (faster-whisper and Piper behind the OpenAI audio endpoints, over real HTTP). The
caller speaks (Piper-rendered speech, 100 ms frames over ``/v1/realtime``), asks about an order
and hears the answer; then the STT engine dies, and the next spoken turn gets the stage's error
while the session carries on by text and ``/readyz`` names the endpoint.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from starlette.testclient import TestClient

from tests.inference.speech import normalise
from tests.inference.test_cpu_demo_call import demo_profiles
from tests.support.audio_servers import STT_MODEL, TTS_MODEL, VOICE, SpeechServer, speech_models
from tests.support.wsclient import ProtocolClient
from vocero.app.server import create_app
from vocero.app.settings import Settings

pytestmark = [pytest.mark.model, pytest.mark.timeout(600)]
ASKED = "What is the status of order A123?"
SILENCE = bytes(2 * 16_000)  # a second: the caller has finished


def speak(pc: ProtocolClient, pcm16: bytes) -> None:
    """The caller's audio in 100 ms frames, as fast as the test client sends them (the VAD and
    the turn policy count audio time, not wall time), then a second of silence."""
    audio = pcm16 + SILENCE
    for at in range(0, len(audio), 3200):
        pc.audio(audio[at:at + 3200])


def answer_audio(pc: ProtocolClient, generation_id: str) -> tuple[bytes, int]:
    deltas = [p for p in pc.of_type("response.audio_delta.v1")
              if p["generation_id"] == generation_id]
    assert deltas, "no audio came back"
    return b"".join(base64.b64decode(p["audio"]) for p in deltas), int(deltas[0]["sample_rate"])


def to_16k(pcm16: bytes, rate: int) -> bytes:
    samples = np.frombuffer(pcm16, dtype="<i2").astype(np.float32)
    at = np.linspace(0, len(samples) - 1, round(len(samples) * 16_000 / rate))
    return np.interp(at, np.arange(len(samples)), samples).astype("<i2").tobytes()


def squeezed(texts: Iterable[str]) -> str:
    """The words of ``texts`` run together: the unit's spoken form ("order A 1 2 3") and its
    text ("order A123") compare equal."""
    return "".join(normalise(" ".join(texts)))


def speculations_used(client: TestClient) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith('vocero_stt_speculations_total{outcome="used"}'):
            return float(line.split()[-1])
    return 0.0


def test_a_spoken_order_question_over_served_speech_engines_then_the_stt_engine_dies(
    tmp_path: Path,
) -> None:
    models = speech_models()
    stt_engine, tts_engine = SpeechServer(models), SpeechServer(models)
    profiles, _ = demo_profiles(tmp_path)
    settings = Settings(
        runners="cpu", db=f"sqlite+aiosqlite:///{tmp_path}/vocero.db", profiles=str(profiles),
        followups_tick_s=0,
        stt_url=stt_engine.url, stt_model=STT_MODEL,
        tts_url=tts_engine.url, tts_model=TTS_MODEL, tts_voice=VOICE,
    )
    with stt_engine, tts_engine, TestClient(create_app(settings)) as client:
        assert client.portal is not None
        runtime: Any = client.app.state.runtime  # type: ignore[attr-defined]
        client.portal.call(runtime.ready.wait)
        ready = client.get("/readyz").json()
        assert {s: e["health"] for s, e in ready["endpoints"].items()} == {
            "stt": "ready", "tts": "ready"}
        # Warm-up: one transcription of silence and one "Ready." each, nothing else.
        assert [r.path for r in stt_engine.received] == ["/v1/audio/transcriptions"]
        assert [r.text for r in tts_engine.received] == ["Ready."]
        stt_mark, tts_mark = len(stt_engine.received), len(tts_engine.received)
        streams = len(tts_engine.streams)
        used_before = speculations_used(client)

        with client.websocket_connect("/v1/realtime") as ws:
            pc = ProtocolClient(ws)
            applied = pc.connect("demo-token")["data"]["payload"]
            speak(pc, models.speak_16k(ASKED))
            final = pc.expect("transcript.final.v1")["data"]["payload"]["text"]
            done = pc.expect("response.completed.v1")["data"]["payload"]
            audio, rate = answer_audio(pc, done["generation_id"])

            # What the caller said, heard by Whisper over HTTP, the order id as spelt.
            assert "a123" in normalise(final), final
            heard_turn = stt_engine.received[stt_mark:]
            assert heard_turn and all(r.status == 200 for r in heard_turn)
            assert final in [r.text for r in heard_turn]
            assert all("order A123" in r.fields["prompt"] for r in heard_turn)  # vocabulary
            assert speculations_used(client) == used_before + 1  # the early words were final

            # What the agent said: the tool's answer, each unit one streamed Piper request.
            assert done["status"] == "completed", done
            said = done["heard_text"]
            assert "A123" in said and "shipped" in said, said  # all of it was played
            spoken = tts_engine.received[tts_mark:]
            assert squeezed(r.text for r in spoken) == squeezed([said])  # "A 1 2 3": "A123"
            assert len(tts_engine.streams) - streams == len(spoken)
            assert all(s.finished for s in tts_engine.streams[streams:])
            assert rate == applied["effective"]["output_sample_rate"]
            streamed = sum((s.bytes_sent - 44) // 2 for s in tts_engine.streams[streams:])
            expected = streamed * rate / models.voice_rate
            assert abs(len(audio) // 2 - expected) <= 0.01 * expected  # all of it, resampled
            back = " ".join(normalise(models.transcribe_16k(to_16k(audio, rate))))
            assert back.startswith("order a") and back.endswith(  # to its last word
                "its delivery date is wednesday december 2"), back

            # The STT engine dies. The next spoken turn gets STT_UNAVAILABLE, not a hang.
            stt_engine.stop()
            dead_mark = len(stt_engine.received)
            speak(pc, models.speak_16k(ASKED))
            error = pc.expect("error.v1")["data"]["payload"]
            assert error["code"] == "STT_UNAVAILABLE" and error["retryable"] is True, error
            pc.expect("session.state.v1", lambda p: p["state"] == "DEGRADED")
            assert len(stt_engine.received) == dead_mark  # refused: nothing reached it
            down = client.get("/readyz")
            assert down.status_code == 200  # the process serves on: text turns still work
            stt_status = down.json()["endpoints"]["stt"]
            assert stt_status["health"] == "degraded", stt_status
            assert stt_engine.url in stt_status["detail"] and STT_MODEL in stt_status["detail"]
            assert down.json()["endpoints"]["tts"]["health"] == "ready"

            # The session survives: a typed question is answered, spoken by the TTS engine.
            tts_mark = len(tts_engine.received)
            pc.send("input.text.v1", {"text": "What is the status of order A124?"})
            typed = pc.expect("response.completed.v1")["data"]["payload"]
            assert typed["status"] == "completed" and "A124" in typed["heard_text"], typed
            assert answer_audio(pc, typed["generation_id"])[0]
            assert squeezed(r.text for r in tts_engine.received[tts_mark:]) == squeezed(
                [typed["heard_text"]])
        scraped = client.get("/metrics").text
        assert 'vocero_endpoint_errors_total{stage="stt",status="0"}' in scraped
