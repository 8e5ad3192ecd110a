"""Speaking one generation: every sentence is a planned, grounded unit, admitted at every
boundary before its audio leaves (docs/grounding.md).

:func:`speaking` opens a :class:`Speaker` for one generation inside its own task group. The
generation's planner (:class:`~vocero.speech.UnitPlanner`) turns what the answer produces into
units: the model's sentences, checked against the turn's evidence; approved claims; read-outs of
tool results; the application's own wording (read-backs, denials, questions). A refused unit is
recorded and never spoken; the fallback planned after it is said instead. A worker synthesizes
unit by unit into the data lane, asking the session's :class:`~vocero.speech.Admission` after the
unit waited in the queue, after every await of synthesis, and right before each audio chunk is
submitted: a unit of a stopped generation, of an old question, or older than
``unit_max_age_ms`` is dropped, and recorded so. The worker lives inside the generation's cancel
scope, so a stop cancels the model, the synthesis and the queued frames together; units still
queued then are recorded with the reason they never played. A TTS failure keeps the text flowing
and never switches to another voice.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Protocol

import anyio
import structlog
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from vocero.contracts import events as ev
from vocero.contracts.domain import VoiceRef
from vocero.contracts.errors import CapacityError, ErrorCode
from vocero.contracts.ports import AlignedTts, ClaimAnswer, SpokenThrough, Tts
from vocero.inference.runner_set import RunnerSet
from vocero.observability import tracing
from vocero.orchestrator.context import Timeouts
from vocero.orchestrator.echo import EchoGate
from vocero.orchestrator.generation import Generation, UnitRecord
from vocero.orchestrator.machine import Event, Step
from vocero.orchestrator.output import OutFrame, OutputChannel
from vocero.orchestrator.speech_rate import rate_of
from vocero.orchestrator.units import LedgerHost, UnitLedger
from vocero.speech import (
    Decision,
    EvidenceRef,
    PlannedUnit,
    ToolEvidence,
    UnitKind,
    UnitPlanner,
)

log = structlog.get_logger("vocero.speaker")

_SENTENCES = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
HeldAudio = Callable[[str, VoiceRef], AsyncIterator[bytes | SpokenThrough] | None]
"""Audio synthesized ahead for a unit of exactly this speech and voice, if there is some."""
UNIT_QUEUE = 4
"""Units planned ahead of the one being synthesized; the model waits when the queue is full."""
STALLED = Decision("expired", "output_stalled")
"""Why a unit never played when the client stopped reporting playout for the grace period."""


class SpeakerHost(LedgerHost, Protocol):
    """What a speaker needs from its session."""

    runners: RunnerSet
    out: OutputChannel
    timeouts: Timeouts
    monotonic: Callable[[], float]
    echo: EchoGate

    def fire(self, event: Event) -> Step: ...

    def error(self, code: ErrorCode) -> None: ...


@asynccontextmanager
async def speaking(
    host: SpeakerHost, generation: Generation, planner: UnitPlanner, committed_at: float | None
) -> AsyncIterator[Speaker]:
    """A speaker for ``generation`` whose worker runs until the block ends (and, on a normal
    exit, until every unit fed was synthesized and sent). ``committed_at`` is when the caller's
    turn was committed (time to first sound counts from it); ``None`` for speech no caller turn
    asked for."""
    send, receive = anyio.create_memory_object_stream[PlannedUnit](UNIT_QUEUE)
    speaker = Speaker(host, generation, planner, committed_at, send)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(speaker.work, receive)
            try:
                yield speaker
            finally:
                send.close()
    finally:
        speaker.settle_unplayed()


class Speaker:
    def __init__(
        self,
        host: SpeakerHost,
        generation: Generation,
        planner: UnitPlanner,
        committed_at: float | None,
        send: MemoryObjectSendStream[PlannedUnit],
    ) -> None:
        self._host = host
        self._generation = generation
        self.planner = planner
        self._committed_at = committed_at
        self._send = send
        self._ledger = UnitLedger(host)
        self._decided = self._ledger.decided
        self._tts_error_sent = False
        self._tts_broken = False
        self._worker_done = anyio.Event()
        self._stalled = False
        self._free_at = float("-inf")
        """When the audio admitted so far should have finished playing (monotonic seconds)."""
        self.spoke = False
        self.held: HeldAudio | None = None
        """The first unit's audio a prepared answer synthesized before the commit (ADR-0037)."""
        self._playout_from: int | None = None
        """When the answer's first audio was sent (epoch ns): the playout span starts there."""
        """Whether anything was planned to be said in this generation."""

    # ------------------------------------------------------------------------ planning

    async def feed(self, text: str) -> None:
        """The model's streamed words."""
        await self._queue(self.planner.feed(text))

    async def flush(self) -> None:
        await self._queue(self.planner.flush())

    async def answer(self, answer: ClaimAnswer) -> None:
        """The model answered with approved claims (or a paraphrase of them)."""
        await self._queue(self.planner.answer(answer))

    async def read_out(self, call: ToolEvidence) -> None:
        """Say a tool result of this turn in the profile's words (or the claims it found)."""
        await self._queue(self.planner.tool_result(call))

    def cite(self, call: ToolEvidence) -> None:
        """A tool result the model words itself: its values back the model's sentences."""
        self.planner.add_tool_result(call)

    async def say(
        self,
        text: str,
        *,
        kind: UnitKind = "conversational",
        evidence: Sequence[EvidenceRef] = (),
    ) -> None:
        """Speak a whole, application-worded text (read-backs, denials, clarifications), one
        unit a sentence: the first is synthesized sooner, and playout tells exactly which
        sentences were heard (a "yes" that cuts off "Shall I go ahead?")."""
        for sentence in _SENTENCES.split(text.strip()):
            await self._queue(self.planner.say(sentence, kind=kind, evidence=evidence))

    async def again(self, unit: PlannedUnit) -> None:
        """Say ``unit`` of a stopped answer again, as a unit of this one (ADR-0038)."""
        await self._queue([self.planner.again(unit)])

    async def _queue(self, units: Sequence[PlannedUnit]) -> None:
        for unit in units:
            if self._ledger.planned(unit):
                self.spoke = True
                self._generation.planned.append(unit)
                await self._send.send(unit)

    # ------------------------------------------------------------------------ playing

    async def finish(self) -> None:
        """Wait until every unit was synthesized, sent and (by playout) played."""
        self._send.close()
        await self._worker_done.wait()
        host = self._host
        with tracing.span(tracing.PLAYOUT, start_ns=self._playout_from):
            played = await host.out.wait_played(
                self._generation.generation_id, grace_s=host.timeouts.playout_grace_s
            )
        if not played and not self._generation.done:  # the caller's playout stopped moving
            self._generation.stalled = True

    async def work(self, receive: MemoryObjectReceiveStream[PlannedUnit]) -> None:
        try:
            async with receive:
                async for unit in receive:
                    if self._stalled:  # the client stopped playing: nothing more is sent
                        self._decided(unit, STALLED)
                    elif self._allowed(unit):
                        await self._speak(unit)
        finally:
            self._worker_done.set()

    def _now(self, unit: PlannedUnit) -> float:
        """The time admission ages ``unit`` by. Waiting for the earlier units of the answer to
        be spoken is the unit's normal turn, not age: what counts is how long it has waited
        past the moment the audio before it should have ended (when output is blocked, or the
        synthesis stalls, that time grows)."""
        now = self._host.monotonic()
        return now - max(0.0, self._free_at - unit.planned_mono)

    def _allowed(self, unit: PlannedUnit) -> bool:
        """Admission after the unit waited: drop it (and record why) unless it may still play."""
        decision = self._host.admission.check(unit, self._now(unit))
        if decision.ready:
            return True
        self._decided(unit, decision)
        return False

    async def _speak(self, unit: PlannedUnit) -> None:
        host, generation = self._host, self._generation
        record = generation.begin_unit(unit.text)
        if self._tts_broken or not host.ctx.voice_usable():
            if not self._tts_broken:  # revoked (or expired) since the session began
                self._tts_failed(record, ErrorCode.VOICE_UNAVAILABLE)
            record.voiced = False
            await self._text_only(unit, record)
            return
        try:
            await self._synthesize(unit, record)
        except CapacityError:
            self._tts_failed(record, ErrorCode.CAPACITY_EXHAUSTED)
            await self._text_only(unit, record)
        except Exception:
            log.warning("tts_failed", exc_info=True)
            self._tts_failed(record, ErrorCode.TTS_UNAVAILABLE)
            await self._text_only(unit, record)
        finally:
            if not record.started:
                generation.discard_unit(record)  # never played: not part of what was said

    async def _text_only(self, unit: PlannedUnit, record: UnitRecord) -> None:
        """No voice (the TTS failed, the voice was revoked): the words still go, admitted."""
        if not self._ledger.undecided(unit):
            return  # its audio had started: the text went with it
        decision = self._host.admission.admit(unit, self._now(unit))
        if not decision.ready:
            self._decided(unit, decision)
            return
        record.started = True
        self._decided(unit, decision, audio_offset_ms=record.start_ms)
        await self._text(unit, record)

    async def _text(self, unit: PlannedUnit, record: UnitRecord) -> bool:
        generation = self._generation
        delta = ev.TextDelta(
            generation_id=generation.generation_id, unit_id=unit.unit_id, text=record.wire_text
        )
        return await self._host.out.data(
            OutFrame(payload=delta, generation_id=generation.generation_id)
        )

    async def _synthesize(self, unit: PlannedUnit, record: UnitRecord) -> None:
        host, generation = self._host, self._generation
        tts = host.runners.tts
        rate = tts.sample_rate
        started = host.monotonic()
        audio = None
        index = 0
        voice_rate = rate_of(tts, host.ctx.voice.voice_profile_id)
        record.speech_chars = len(unit.speech)
        record.slowest_ms_per_char = voice_rate.slowest()
        try:
            with host.clock.fail_after(host.timeouts.tts_s), tracing.span(
                tracing.TTS, unit_id=unit.unit_id
            ):
                held = self.held(unit.speech, host.ctx.voice) if self.held else None
                if self.held is not None and not generation.had_audio:
                    host.metrics.count("draft_audio", outcome="held" if held else "synthesized")
                async for chunk in held or _aligned(tts, unit.speech, host.ctx.voice):
                    if isinstance(chunk, SpokenThrough):
                        record.alignment.append((chunk.audio_ms, chunk.fraction))
                        continue
                    audio_ms = len(chunk) / 2 / rate * 1000.0
                    room = await host.out.room(
                        generation.generation_id, audio_ms, grace_s=host.timeouts.playout_grace_s
                    )
                    if not room:  # stopped, or the client stopped playing: say no more
                        self._stalled = True
                        generation.stalled = not generation.done
                        return
                    decision = host.admission.admit(unit, self._now(unit))
                    if not decision.ready:
                        self._decided(unit, decision, audio_ms=record.audio_ms)
                        return
                    if index == 0:
                        record.started = True
                        self._free_at = host.monotonic()
                        host.metrics.observe_ms(
                            "tts_ttfa_ms", (host.monotonic() - started) * 1000.0
                        )
                        self._decided(
                            unit,
                            decision,
                            audio_offset_ms=record.start_ms,
                            synthesis=self._ledger.synthesis(tts.name, rate),
                        )
                        audio = host.recorder.unit_audio(
                            host.ctx.session_id, unit.unit_id, sample_rate=rate
                        )
                        if not await self._text(unit, record):
                            return
                        self._first_audio()
                    generation.add_audio(record, audio_ms)
                    self._free_at += audio_ms / 1000.0
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
                    host.echo.played(chunk, host.monotonic())
                    assert audio is not None
                    audio.write(chunk)
                    index += 1
            record.complete = True
            voice_rate.learn(record.speech_chars, record.audio_ms)
        finally:
            if audio is not None:
                audio.close()
                self._ledger.played(unit, audio_offset_ms=record.start_ms, audio_ms=record.audio_ms)

    # ------------------------------------------------------------------------ records

    def settle_unplayed(self) -> None:
        """The generation ended with units that never played (it was stopped): record why."""
        self._ledger.settle(self._host.monotonic())

    def _first_audio(self) -> None:
        """A unit's first audio: the first of the answer is time to first sound."""
        host, generation = self._host, self._generation
        if generation.done:
            return
        if not generation.had_audio:
            if self._committed_at is not None:
                host.metrics.observe_ms(
                    "ttfs_ms", (host.monotonic() - self._committed_at) * 1000.0
                )
            self._playout_from = tracing.now_ns()
        host.fire(Event.AUDIO_FIRST_CHUNK)

    def _tts_failed(self, record: UnitRecord, code: ErrorCode) -> None:
        self._tts_broken = True
        if record.audio_ms == 0.0:
            record.voiced = False
        if not self._tts_error_sent:
            self._tts_error_sent = True
            self._host.error(code)


def _aligned(tts: Tts, text: str, voice: VoiceRef) -> AsyncIterator[bytes | SpokenThrough]:
    """The unit's audio with the engine's alignment points where it gives them."""
    if isinstance(tts, AlignedTts):
        return tts.synthesize_aligned(text, voice)
    return tts.synthesize(text, voice)
