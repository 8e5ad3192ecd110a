"""The STT and TTS stages on serving engines (vocero/inference/remote/stt.py, tts.py), over
real HTTP against :class:`ScriptedEngine`'s OpenAI audio endpoints."""

from __future__ import annotations

import anyio
import pytest

from tests.support.engines import ScriptedEngine
from vocero.contracts.domain import VoiceRef
from vocero.contracts.errors import ErrorCode
from vocero.inference.remote import Endpoint, EndpointError, RemoteStt, RemoteTts

VOICE = VoiceRef(voice_profile_id="builtin", voice_version="default")


def test_speech_streams_as_pcm_resampled_to_the_session_rate() -> None:
    with ScriptedEngine([]) as engine:
        tts = RemoteTts(Endpoint(url=engine.url, model="piper"), voice="joe", sample_rate=16000)

        async def main() -> list[bytes]:
            try:
                return [c async for c in tts.synthesize("Twenty characters!!", VOICE)]
            finally:
                await tts.client.aclose()

        chunks = anyio.run(main)
    assert len(chunks) > 1  # streamed, not one block
    assert abs(sum(len(c) for c in chunks) / 2 - 16000) <= 16  # 1 s of audio at 16 kHz
    assert engine.requests[0] == {"model": "piper", "input": "Twenty characters!!",
                                  "voice": "joe", "response_format": "wav"}


def test_a_transcription_sends_the_utterance_as_wav_with_the_vocabulary() -> None:
    with ScriptedEngine([]) as engine:
        stt = RemoteStt(Endpoint(url=engine.url, model="whisper"))

        async def main() -> str:
            try:
                heard = await stt.transcribe(bytes(32000), sample_rate=16000, locale="en-US",
                                             vocabulary=["A123", "refund"])
                return heard.text
            finally:
                await stt.client.aclose()

        assert anyio.run(main) == "hello there"
    [sent] = engine.requests
    assert (sent["model"], sent["language"], sent["prompt"]) == ("whisper", "en", "A123, refund")
    assert sent["audio_bytes"] == 32000 + 44  # the WAV header and the samples


def test_a_dead_stt_endpoint_is_tried_twice_then_unavailable() -> None:
    with ScriptedEngine([]) as engine:
        engine.dead = True
        stt = RemoteStt(Endpoint(url=engine.url, model="whisper"))

        async def main() -> None:
            try:
                await stt.transcribe(bytes(3200), sample_rate=16000, locale="en-US")
            finally:
                await stt.client.aclose()

        with pytest.raises(EndpointError) as failed:
            anyio.run(main)
    assert failed.value.code == ErrorCode.STT_UNAVAILABLE
    assert len(engine.requests) == 2  # idempotent: one retry
