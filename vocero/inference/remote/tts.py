"""The TTS stage on a serving engine: ``POST /v1/audio/speech``, streamed.

Asks for ``response_format: "wav"``: the header says the engine's rate (``pcm`` has none; OpenAI
means 24 kHz by it, Piper servers their voice's rate), and the body streams as raw PCM16 after
it. Chunks are resampled to :attr:`sample_rate` (the session's output rate) as they arrive, so the
first audio leaves before the unit is rendered whole. A synthesis is not retried:
by the time it could fail audio may have been sent.

The voice asked for is the session's (SPEC §3): the built-in voice is ``--tts-voice`` (the
engine's ``default`` without it); a vault version is spoken by the ``engine_voice`` approved
with it, and one without an ``engine_voice`` is not spoken here at all (:meth:`RemoteTts.speaks`
says so before a session opens with it; :meth:`RemoteTts.synthesize` refuses it with
``VOICE_UNAVAILABLE``), never in another voice.
"""

from __future__ import annotations

import struct
import time
from collections.abc import AsyncIterator

import httpx

from vocero.contracts.domain import DEFAULT_VOICE, VoiceRef
from vocero.contracts.errors import ErrorCode, VoceroError
from vocero.inference.remote.endpoint import Endpoint, EndpointRunner
from vocero.inference.toolkit.audio import float_to_pcm16, pcm16_to_float, resample

OUTPUT_RATE = 24000
_CHUNK_MS = 100


class RemoteTts(EndpointRunner):
    def __init__(self, endpoint: Endpoint, *, voice: str = "", sample_rate: int = OUTPUT_RATE):
        super().__init__("tts", endpoint, ErrorCode.TTS_UNAVAILABLE)
        self.voice = voice
        self.sample_rate = sample_rate

    async def warm_up(self) -> None:
        async for _chunk in self.synthesize("Ready.", DEFAULT_VOICE):
            pass

    def speaks(self, voice: VoiceRef) -> bool:
        """The built-in voice, and a vault version approved with an ``engine_voice``."""
        return voice.builtin or bool(voice.engine_voice)

    def engine_voice(self, voice: VoiceRef) -> str:
        """The engine's name of ``voice``; ``VOICE_UNAVAILABLE`` when it has none."""
        if voice.builtin:
            return self.voice or "default"
        if not voice.engine_voice:
            raise VoceroError(
                "this vault version names no engine voice", code=ErrorCode.VOICE_UNAVAILABLE
            )
        return voice.engine_voice

    async def synthesize(self, text: str, voice: VoiceRef) -> AsyncIterator[bytes]:
        body = {"model": self.endpoint.model, "input": text, "voice": self.engine_voice(voice),
                "response_format": "wav"}
        start, first = time.perf_counter(), True
        self.health.in_flight += 1
        try:
            async with self.client.stream("POST", "/audio/speech", json=body) as response:
                if response.is_error:
                    raise self.health.failed(response.status_code, f"HTTP {response.status_code}")
                async for pcm in _resampled(response.aiter_bytes(), self.sample_rate):
                    if first:
                        self.health.first_event(start)
                        first = False
                    yield pcm
        except httpx.HTTPError as exc:
            raise self.health.from_exception(exc) from exc
        finally:
            self.health.in_flight -= 1
        self.health.ok()


async def _resampled(body: AsyncIterator[bytes], rate: int) -> AsyncIterator[bytes]:
    """PCM16 mono at ``rate`` from a streamed WAV body (header, then samples), in chunks of
    :data:`_CHUNK_MS` however the body arrives: an engine sends a sentence in one piece, and
    the session paces its output by the chunk (a chunk longer than the output's lead can never
    be sent once the client has played all before it)."""
    buffer = b""
    source = 0
    chunk = 0
    async for piece in body:
        buffer += piece
        if not source:
            if len(buffer) < 44:
                continue
            source, start = _wav_header(buffer)
            chunk = max(2, source * _CHUNK_MS // 1000 * 2)
            buffer = buffer[start:]
        at = 0
        while len(buffer) - at >= chunk:
            yield _convert(buffer[at:at + chunk], source, rate)
            at += chunk
        buffer = buffer[at:]
    usable = len(buffer) - len(buffer) % 2
    if source and usable:
        yield _convert(buffer[:usable], source, rate)


def _convert(pcm16: bytes, source: int, rate: int) -> bytes:
    if source == rate:
        return pcm16
    return float_to_pcm16(resample(pcm16_to_float(pcm16), source, rate))


def _wav_header(data: bytes) -> tuple[int, int]:
    """The sample rate and where the samples start (the ``data`` chunk; its size may be a
    streaming placeholder)."""
    rate = struct.unpack_from("<I", data, 24)[0]
    at = 12
    while at + 8 <= len(data):
        tag, size = data[at:at + 4], struct.unpack_from("<I", data, at + 4)[0]
        if tag == b"data":
            return int(rate), at + 8
        at += 8 + size
    return int(rate), 44
