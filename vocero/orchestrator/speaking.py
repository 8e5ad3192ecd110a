"""Text to voice for one generation: spoken units go to the TTS while the model keeps writing.

The model loop feeds text; a worker task synthesizes unit by unit into the data lane. Both live
inside the generation's cancel scope, so a stop cancels the model, the TTS and every queued frame
together. A TTS failure keeps the text flowing and never switches to another voice.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING

import anyio
import structlog
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from vocero.contracts import events as ev
from vocero.contracts.errors import CapacityError, ErrorCode
from vocero.orchestrator.generation import Generation, UnitRecord
from vocero.orchestrator.machine import Event
from vocero.orchestrator.output import OutFrame
from vocero.speech.units import SpokenUnit, UnitChunker

if TYPE_CHECKING:
    from vocero.orchestrator.session import Session

log = structlog.get_logger("vocero.speaker")

UNIT_QUEUE = 4


class Speaker:
    def __init__(self, session: Session, generation: Generation, committed_at: float) -> None:
        self._session = session
        self._generation = generation
        self._committed_at = committed_at
        self._chunker = UnitChunker(word_budget=session.ctx.profile.word_budget)
        self._send: MemoryObjectSendStream[SpokenUnit]
        self._receive: MemoryObjectReceiveStream[SpokenUnit]
        self._send, self._receive = anyio.create_memory_object_stream[SpokenUnit](UNIT_QUEUE)
        self._tg = anyio.create_task_group()
        self._tts_error_sent = False
        self._tts_broken = False
        self._worker_done = anyio.Event()

    async def __aenter__(self) -> Speaker:
        await self._tg.__aenter__()
        self._tg.start_soon(self._worker)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        self._send.close()
        return await self._tg.__aexit__(exc_type, exc, tb)

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
        session = self._session
        await session.out.wait_played(
            self._generation.generation_id, grace_s=session.timeouts.playout_grace_s
        )

    async def _worker(self) -> None:
        try:
            async with self._receive:
                async for unit in self._receive:
                    await self._speak(unit)
        finally:
            self._worker_done.set()

    async def _speak(self, unit: SpokenUnit) -> None:
        session, generation = self._session, self._generation
        record = generation.begin_unit(unit.text)
        delta = ev.TextDelta(
            generation_id=generation.generation_id, unit_id=unit.unit_id, text=unit.text
        )
        if not await session.out.data(
            OutFrame(payload=delta, generation_id=generation.generation_id)
        ):
            return
        if self._tts_broken:
            record.voiced = False
            return
        if not session.ctx.voice_usable():
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
        session, generation = self._session, self._generation
        tts = session.runners.tts
        rate = tts.sample_rate
        started = session.monotonic()
        index = 0
        with anyio.fail_after(session.timeouts.tts_s):
            async for chunk in tts.synthesize(unit.text, session.ctx.voice):
                audio_ms = len(chunk) / 2 / rate * 1000.0
                if index == 0:
                    session.metrics.observe_ms(
                        "tts_ttfa_ms", (session.monotonic() - started) * 1000.0
                    )
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
                if not await session.out.data(frame):
                    return
                index += 1

    def _first_audio(self) -> None:
        session = self._session
        if session.machine.state in ("THINKING", "AWAITING_CONFIRMATION"):
            if not self._generation.had_audio:
                session.metrics.observe_ms(
                    "ttfs_ms", (session.monotonic() - self._committed_at) * 1000.0
                )
            session.try_fire(Event.AUDIO_FIRST_CHUNK)

    def _tts_failed(self, record: UnitRecord, code: ErrorCode) -> None:
        self._tts_broken = True
        if record.audio_ms == 0.0:
            record.voiced = False
        if not self._tts_error_sent:
            self._tts_error_sent = True
            self._session.error(code)
