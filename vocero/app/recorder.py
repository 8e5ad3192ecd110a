"""Persists conversations off the hot path: one writer task drains a bounded queue in order."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

import anyio
import structlog
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from vocero.store.models import GenerationStatus, TurnSource
from vocero.store.repositories import Conversations
from vocero.store.units import UnitAudioBuffer, UnitEntry, UnitRepository

log = structlog.get_logger("vocero.recorder")

Write = Callable[[], Awaitable[Any]]
QUEUE = 4096


class StoreRecorder:
    """Implements the orchestrator's ``SessionRecorder``. When the queue is full (the database
    is far behind) a write is refused and counted, never allowed to block a conversation."""

    def __init__(
        self,
        conversations: Conversations,
        on_drop: Callable[[], None],
        *,
        units: UnitRepository | None = None,
    ) -> None:
        self._conversations = conversations
        self._units = units
        self._on_drop = on_drop
        self._send: MemoryObjectSendStream[Write]
        self._receive: MemoryObjectReceiveStream[Write]
        self._send, self._receive = anyio.create_memory_object_stream[Write](QUEUE)
        self._idle = anyio.Event()
        self._idle.set()
        self._pending = 0

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        task_status.started()
        async with self._receive:
            async for write in self._receive:
                try:
                    with anyio.CancelScope(shield=True):
                        await write()
                except Exception:
                    log.exception("recorder.write_failed")
                finally:
                    self._pending -= 1
                    if self._pending == 0:
                        self._idle.set()

    async def flush(self) -> None:
        """Wait until every queued write has been applied."""
        await self._idle.wait()

    def _submit(self, write: Write) -> None:
        try:
            self._send.send_nowait(write)
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._on_drop()
            return
        self._pending += 1
        self._idle = anyio.Event() if self._idle.is_set() else self._idle

    def turn(self, session_id: str, turn_id: str, source: str, text: str) -> None:
        c = self._conversations
        kind = cast(TurnSource, source)
        self._submit(
            lambda: c.add_turn(session_id=session_id, turn_id=turn_id, source=kind, text=text)
        )

    def generation(
        self,
        session_id: str,
        generation_id: str,
        turn_id: str,
        *,
        status: str,
        generated_text: str,
        heard_text: str,
        played_ms: float,
        sent_ms: float,
    ) -> None:
        c = self._conversations
        self._submit(
            lambda: c.upsert_generation(
                generation_id=generation_id,
                session_id=session_id,
                turn_id=turn_id,
                status=cast(GenerationStatus, status),
                generated_text=generated_text,
                heard_text=heard_text,
                played_ms=int(played_ms),
                sent_ms=int(sent_ms),
            )
        )

    def state(self, session_id: str, state: str) -> None:
        c = self._conversations
        self._submit(lambda: c.update_session(session_id, state=state))

    def configuration(self, session_id: str, effective: dict[str, Any]) -> None:
        """The effective configuration an update applied."""
        c = self._conversations
        self._submit(lambda: c.update_session(session_id, effective=effective))

    def close(self, session_id: str, state: str) -> None:
        c = self._conversations
        self._submit(lambda: c.close_session(session_id, state=state))

    def unit(self, entry: UnitEntry) -> None:
        """A spoken unit planned, or decided (SPEC §8); without a unit store it is not kept."""
        units = self._units
        if units is not None:
            self._submit(lambda: units.record(entry))

    def unit_audio(self, session_id: str, unit_id: str, *, sample_rate: int) -> UnitAudioWriter:
        """A writer for one admitted unit's audio as synthesized (for ``vocero review``): the
        speaker writes each PCM chunk it submits and closes it when the unit ends; the audio is
        kept in memory (bounded per unit) and saved in one queued write at close."""
        buffer = UnitAudioBuffer(unit_id, sample_rate=sample_rate)
        return UnitAudioWriter(buffer, self._save_audio(session_id))

    def _save_audio(self, session_id: str) -> Callable[[UnitAudioBuffer], None]:
        units = self._units

        def save(buffer: UnitAudioBuffer) -> None:
            if units is not None and buffer.size:
                self._submit(lambda: units.save_audio(session_id, buffer))

        return save

    def stop(self) -> None:
        self._send.close()


class UnitAudioWriter:
    """One unit's synthesized audio on its way to the store: ``write`` chunks, then ``close``
    (idempotent; nothing is written after it)."""

    def __init__(self, buffer: UnitAudioBuffer, save: Callable[[UnitAudioBuffer], None]) -> None:
        self._buffer = buffer
        self._save = save
        self._closed = False

    def write(self, pcm16: bytes) -> None:
        if not self._closed:
            self._buffer.write(pcm16)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._save(self._buffer)
