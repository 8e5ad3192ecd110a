"""Text to voice for one generation: spoken units go to the TTS while the model keeps writing.

:func:`speaking` opens a :class:`Speaker` for one generation inside its own task group: the
model loop feeds text; a worker synthesizes unit by unit into the data lane. Both live inside the
generation's cancel scope, so a stop cancels the model, the TTS and every queued frame together.
A TTS failure keeps the text flowing and never switches to another voice.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Protocol

import anyio
import structlog
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from vocero.contracts import events as ev
from vocero.contracts.errors import CapacityError, ErrorCode
from vocero.contracts.ports import Timers
from vocero.inference.runner_set import RunnerSet
from vocero.orchestrator.context import SessionContext, SessionMetrics, Timeouts
from vocero.orchestrator.generation import Generation, UnitRecord
from vocero.orchestrator.machine import Event, Step
from vocero.orchestrator.output import OutFrame, OutputChannel
from vocero.speech.units import SpokenUnit, UnitChunker

log = structlog.get_logger("vocero.speaker")

UNIT_QUEUE = 4
"""Units planned ahead of the one being synthesized; the model waits when the queue is full."""


class SpeakerHost(Protocol):
    """What a speaker needs from its session."""

    ctx: SessionContext
    runners: RunnerSet
    out: OutputChannel
    metrics: SessionMetrics
    timeouts: Timeouts
    clock: Timers
    monotonic: Callable[[], float]

    def fire(self, event: Event) -> Step: ...

    def error(self, code: ErrorCode) -> None: ...


@asynccontextmanager
async def speaking(
    host: SpeakerHost, generation: Generation, committed_at: float
) -> AsyncIterator[Speaker]:
    """A speaker for ``generation`` whose worker runs until the block ends (and, on a normal
    exit, until every unit fed was synthesized and sent)."""
    send, receive = anyio.create_memory_object_stream[SpokenUnit](UNIT_QUEUE)
    speaker = Speaker(host, generation, committed_at, send)
    async with anyio.create_task_group() as tg:
        tg.start_soon(speaker.work, receive)
        try:
            yield speaker
        finally:
            send.close()


class Speaker:
    def __init__(
        self,
        host: SpeakerHost,
        generation: Generation,
        committed_at: float,
        send: MemoryObjectSendStream[SpokenUnit],
    ) -> None:
        self._host = host
        self._generation = generation
        self._committed_at = committed_at
        self._send = send
        self._chunker = UnitChunker(word_budget=host.ctx.profile.word_budget)
        self._tts_error_sent = False
        self._tts_broken = False
        self._worker_done = anyio.Event()

    async def feed(self, text: str) -> None:
        for unit in self._chunker.feed(text):
            await self._send.send(unit)

    async def flush(self) -> None:
        for unit in self._chunker.flush():
            await self._send.send(unit)

    async def say(self, text: str) -> None:
        """Speak a whole, application-worded text (read-backs, denials, clarifications)."""
        if text:
            await self.feed(text + " ")
            await self.flush()

    async def finish(self) -> None:
        """Wait until every unit was synthesized, sent and (by playout) played."""
        self._send.close()
        await self._worker_done.wait()
        host = self._host
        await host.out.wait_played(
            self._generation.generation_id, grace_s=host.timeouts.playout_grace_s
        )

    async def work(self, receive: MemoryObjectReceiveStream[SpokenUnit]) -> None:
        try:
            async with receive:
                async for unit in receive:
                    await self._speak(unit)
        finally:
            self._worker_done.set()

    async def _speak(self, unit: SpokenUnit) -> None:
        host, generation = self._host, self._generation
        record = generation.begin_unit(unit.text)
        delta = ev.TextDelta(
            generation_id=generation.generation_id, unit_id=unit.unit_id, text=record.wire_text
        )
        if not await host.out.data(OutFrame(payload=delta, generation_id=generation.generation_id)):
            return
        if self._tts_broken:
            record.voiced = False
            return
        if not host.ctx.voice_usable():
            # Revoked (or expired) since the session began: refuse new synthesis at once and keep
            # the words as text; never fall back to another voice.
            self._tts_failed(record, ErrorCode.TTS_UNAVAILABLE)
            return
        try:
            await self._synthesize(unit, record)
        except CapacityError:
            self._tts_failed(record, ErrorCode.CAPACITY_EXHAUSTED)
        except Exception:
            log.warning("tts_failed", exc_info=True)
            self._tts_failed(record, ErrorCode.TTS_UNAVAILABLE)

    async def _synthesize(self, unit: SpokenUnit, record: UnitRecord) -> None:
        host, generation = self._host, self._generation
        tts = host.runners.tts
        rate = tts.sample_rate
        started = host.monotonic()
        index = 0
        with host.clock.fail_after(host.timeouts.tts_s):
            async for chunk in tts.synthesize(unit.text, host.ctx.voice):
                audio_ms = len(chunk) / 2 / rate * 1000.0
                if index == 0:
                    host.metrics.observe_ms("tts_ttfa_ms", (host.monotonic() - started) * 1000.0)
                    self._first_audio()
                generation.add_audio(record, audio_ms)
                payload = ev.AudioOut(
                    generation_id=generation.generation_id,
                    unit_id=unit.unit_id,
                    chunk_index=index,
                    audio=chunk,
                    sample_rate=rate,
                )
                frame = OutFrame(
                    payload=payload, generation_id=generation.generation_id, audio_ms=audio_ms
                )
                if not await host.out.data(frame):
                    return
                index += 1

    def _first_audio(self) -> None:
        """A unit's first audio: the first of the answer is time to first sound."""
        host, generation = self._host, self._generation
        if generation.done:
            return
        if not generation.had_audio:
            host.metrics.observe_ms("ttfs_ms", (host.monotonic() - self._committed_at) * 1000.0)
        host.fire(Event.AUDIO_FIRST_CHUNK)

    def _tts_failed(self, record: UnitRecord, code: ErrorCode) -> None:
        self._tts_broken = True
        if record.audio_ms == 0.0:
            record.voiced = False
        if not self._tts_error_sent:
            self._tts_error_sent = True
            self._host.error(code)
