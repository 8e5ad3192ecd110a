"""The remote STT and TTS stages against real engines: faster-whisper and Piper behind the
OpenAI audio endpoints over real HTTP (:class:`~tests.support.audio_servers.SpeechServer`, on
the model files the CPU runners use). What is asserted is what the engine heard and said, what
it received, and when its client went away."""

from __future__ import annotations

import time
from collections.abc import Iterator

import anyio
import anyio.lowlevel
import pytest

from tests.inference.speech import normalise, word_errors
from tests.support.audio_servers import STT_MODEL, TTS_MODEL, VOICE, SpeechServer, speech_models
from vocero.contracts.domain import VoiceRef
from vocero.contracts.errors import ErrorCode
from vocero.inference.remote import Endpoint, EndpointError, RemoteStt, RemoteTts

pytestmark = [pytest.mark.model, pytest.mark.timeout(300)]

BUILTIN = VoiceRef(voice_profile_id="builtin", voice_version="default")
ASKED = "What is the status of order A123?"
HINT = ("order A123", "Saturdays", "unopened items")
ANSWER = "Order A123 has shipped. It should arrive on Tuesday. Is there anything else?"
LONG = " ".join(f"This is sentence number {n} of a long answer." for n in range(1, 9))


@pytest.fixture(scope="module")
def server() -> Iterator[SpeechServer]:
    with SpeechServer() as running:
        yield running


def remote_stt(server: SpeechServer) -> RemoteStt:
    return RemoteStt(Endpoint(url=server.url, model=STT_MODEL))


def remote_tts(server: SpeechServer, rate: int = 16_000) -> RemoteTts:
    return RemoteTts(Endpoint(url=server.url, model=TTS_MODEL), voice=VOICE, sample_rate=rate)


def test_whisper_over_http_hears_the_order_id_and_the_early_words_at_a_pause(
    server: SpeechServer,
) -> None:
    models = speech_models()
    pause = bytes(2 * 8_000)  # half a second of silence
    first = models.speak_16k("I have a question.") + pause
    audio = first + models.speak_16k(ASKED)
    stt = remote_stt(server)
    mark = len(server.received)

    async def main() -> tuple[str, bool, str, bool]:
        try:
            early = await stt.partial(first, sample_rate=16_000, locale="en-US")
            heard = await stt.transcribe(audio, sample_rate=16_000, locale="en-US",
                                         vocabulary=HINT)
            return early.text, early.final, heard.text, heard.final
        finally:
            await stt.client.aclose()

    early, early_final, heard, final = anyio.run(main)
    assert "question" in normalise(early) and not early_final, early
    assert "a123" in normalise(heard), heard  # the order id, as the profile spells it
    assert word_errors("I have a question. " + ASKED, heard)[0] <= 2, heard
    assert final and stt.status().health == "ready"
    sent = server.received[mark:]
    assert [r.fields["model"] for r in sent] == [STT_MODEL, STT_MODEL]
    assert [r.fields["language"] for r in sent] == ["en", "en"]
    assert sent[1].fields["prompt"] == ", ".join(HINT)  # the vocabulary primes Whisper
    assert sent[1].fields["audio_bytes"] == len(audio) + 44  # one WAV file, all of it
    assert [r.text for r in sent] == [early, heard]


def test_piper_over_http_streams_each_sentence_as_it_renders_resampled_to_the_session_rate(
    server: SpeechServer,
) -> None:
    tts = remote_tts(server, rate=16_000)
    arrived: list[float] = []

    async def main() -> list[bytes]:
        chunks = []
        try:
            async for chunk in tts.synthesize(ANSWER, BUILTIN):
                arrived.append(time.perf_counter())
                chunks.append(chunk)
        finally:
            await tts.client.aclose()
        return chunks

    chunks = anyio.run(main)
    stream = server.streams[-1]
    assert stream.text == ANSWER and stream.finished
    assert len(stream.sentences) == 3, "Piper renders a sentence at a time"
    assert len(chunks) > 1
    # ~100 ms each, as the session paces its output by the chunk (Piper sends a sentence whole)
    assert max(len(c) for c in chunks) <= 2 * 1_600, [len(c) for c in chunks]
    assert arrived[0] < stream.sentences[-1], "the first audio came before the last sentence"
    voice_samples = (stream.bytes_sent - 44) // 2
    expected = voice_samples * 16_000 / speech_models().voice_rate
    assert abs(sum(len(c) for c in chunks) // 2 - expected) <= len(chunks)
    assert tts.status().health == "ready" and tts.status().in_flight == 0
    [request] = [r for r in server.requests("/audio/speech") if r.text == ANSWER]
    assert request.fields == {"model": TTS_MODEL, "input": ANSWER, "voice": VOICE,
                              "response_format": "wav"}
    heard = speech_models().transcribe_16k(b"".join(chunks))  # at 16 kHz, it is speech
    assert "shipped" in normalise(heard) and word_errors(ANSWER, heard)[0] <= 3, heard


def test_a_barge_in_mid_stream_closes_the_speech_request(server: SpeechServer) -> None:
    """As the orchestrator speaks: each chunk is handed on (an await), and a barge-in cancels
    the generation's scope there; the request closes with it, the client still open."""
    tts = remote_tts(server, rate=24_000)
    server.client_left.clear()

    async def main() -> tuple[int, bool]:
        got = 0
        try:
            with anyio.CancelScope() as barge_in:
                async for _chunk in tts.synthesize(LONG, BUILTIN):
                    got += 1
                    barge_in.cancel()  # the caller spoke over the first audio
                    await anyio.lowlevel.checkpoint()  # handing the chunk on
            seen = await anyio.to_thread.run_sync(server.client_left.wait, 20)
            return got, seen
        finally:
            await tts.client.aclose()

    got, seen = anyio.run(main)
    assert got == 1
    assert seen, "the server never saw the client go"
    stream = server.streams[-1]
    assert stream.text == LONG and stream.client_left and not stream.finished
    assert len(stream.sentences) < 8, "the engine stopped rendering what nobody would hear"
    assert tts.status().in_flight == 0
    assert tts.status().health != "degraded", "a barge-in is not an endpoint failure"


async def listen_while_it_dies(tts: RemoteTts, engine: SpeechServer, got: list[bytes]) -> None:
    """Stream :data:`LONG` into ``got``; the engine dies once its first audio has arrived."""
    async for chunk in tts.synthesize(LONG, BUILTIN):
        got.append(chunk)
        if len(got) == 1:
            await anyio.to_thread.run_sync(engine.die)


def test_a_speech_engine_that_dies_mid_stream_fails_the_unit_then_recovers() -> None:
    with SpeechServer() as dying:
        tts = remote_tts(dying)
        stt = remote_stt(dying)

        got: list[bytes] = []

        async def main() -> tuple[EndpointError, EndpointError, EndpointError]:
            try:
                await tts.warm_up()
                await stt.warm_up()
                with pytest.raises(EndpointError) as cut:
                    await listen_while_it_dies(tts, dying, got)
                assert tts.status().health == "degraded"
                with pytest.raises(EndpointError) as refused:
                    async for _chunk in tts.synthesize("Hello.", BUILTIN):
                        pass
                with pytest.raises(EndpointError) as unheard:
                    await stt.transcribe(bytes(3200), sample_rate=16_000, locale="en-US")
                assert stt.status().health == "degraded"
                await anyio.to_thread.run_sync(dying.start)  # the engine is back on its port
                again = [c async for c in tts.synthesize("Hello again.", BUILTIN)]
                assert again and tts.status().health == "ready"
                await stt.transcribe(bytes(3200), sample_rate=16_000, locale="en-US")
                assert stt.status().health == "ready"
                return cut.value, refused.value, unheard.value
            finally:
                await tts.client.aclose()
                await stt.client.aclose()

        cut, refused, unheard = anyio.run(main)
    assert got, "audio came before the engine died"
    assert (cut.code, refused.code, unheard.code) == (
        ErrorCode.TTS_UNAVAILABLE, ErrorCode.TTS_UNAVAILABLE, ErrorCode.STT_UNAVAILABLE)
    assert (cut.status, refused.status, unheard.status) == (0, 0, 0)  # no answer
    assert tts.health.errors == {"0": 2}  # the cut stream and the refused connection
    crashed = [s for s in dying.streams if s.text == LONG]
    assert len(crashed) == 1 and not crashed[0].finished
