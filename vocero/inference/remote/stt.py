"""The STT stage on a serving engine: ``POST /v1/audio/transcriptions``, one utterance a call.

The utterance goes as a WAV file (multipart, ``model``, ``language``, and the session's
vocabulary as ``prompt``, the way Whisper servers are primed). A transcription is idempotent, so
a failed attempt with no answer is tried once more; a second failure raises ``STT_UNAVAILABLE``.
Partials cost a whole request each: ``partial_interval_ms`` is ``0`` (the orchestrator then asks
for one only to judge a possible barge-in), and the early transcript at a pause is an ordinary
final call.
"""

from __future__ import annotations

import io
import wave
from collections.abc import Sequence

import httpx

from vocero.contracts.errors import ErrorCode
from vocero.contracts.ports import Transcription
from vocero.inference.remote.endpoint import Endpoint, EndpointError, EndpointRunner


class RemoteStt(EndpointRunner):
    partial_interval_ms = 0

    def __init__(self, endpoint: Endpoint) -> None:
        super().__init__("stt", endpoint, ErrorCode.STT_UNAVAILABLE)

    async def warm_up(self) -> None:
        """One transcription of a short silence: the endpoint answers, with this model."""
        await self.transcribe(bytes(3200), sample_rate=16000, locale="en-US")

    async def transcribe(
        self, pcm16: bytes, *, sample_rate: int, locale: str, utterance_id: str = "",
        vocabulary: Sequence[str] = (),
    ) -> Transcription:
        data = {"model": self.endpoint.model, "language": locale.split("-")[0],
                "response_format": "json"}
        if vocabulary:
            data["prompt"] = ", ".join(vocabulary)[:800]
        files = {"file": ("utterance.wav", wav_bytes(pcm16, sample_rate), "audio/wav")}
        error: EndpointError | None = None
        for _attempt in range(2):
            self.health.in_flight += 1
            try:
                response = await self.client.post(
                    "/audio/transcriptions", data=data, files=files
                )
                response.raise_for_status()
            except (httpx.TransportError, httpx.HTTPStatusError) as exc:
                error = self.health.from_exception(exc)
                if isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code < 500:
                    break
                continue
            finally:
                self.health.in_flight -= 1
            self.health.ok()
            return Transcription(text=str(response.json().get("text", "")).strip())
        assert error is not None
        raise error

    async def partial(self, pcm16: bytes, *, sample_rate: int, locale: str) -> Transcription:
        heard = await self.transcribe(pcm16, sample_rate=sample_rate, locale=locale)
        return Transcription(text=heard.text, final=False)


def wav_bytes(pcm16: bytes, sample_rate: int) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sample_rate)
        w.writeframes(pcm16)
    return out.getvalue()
