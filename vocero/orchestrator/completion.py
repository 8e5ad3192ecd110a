"""How a generation ends: stopped at once (barge-in, cancel, close) or finished, and what the
caller heard of it.

A stop is synchronous, so nothing of the generation can follow it: refuse its frames, send the
flush, cancel its scope, complete it as heard (cut at the last played position). The generation's
task then unwinds and :meth:`Completion.settle` reports it to the machine (``OUTPUT_STOPPED``
ends ``INTERRUPTING``) after the delivery evidence is recorded, so the next turn's answer is
judged on what this one delivered. The history the model sees gets only the heard text.
"""

from __future__ import annotations

import asyncio
from typing import Literal

import anyio

from vocero.contracts import events as ev
from vocero.contracts.ports import Message
from vocero.orchestrator.core import SessionCore
from vocero.orchestrator.generation import Generation
from vocero.orchestrator.machine import Effect, Event

StopStatus = Literal["interrupted", "canceled"]


class Completion:
    def __init__(self, core: SessionCore) -> None:
        self.core = core
        core.on(Effect.STOP_OUTPUT, self._stop_live)

    def _stop_live(self, *, reason: str = "barge_in", status: str = "interrupted") -> None:
        generation = self.core.generations.live()
        if generation is not None:
            self.stop(
                generation,
                reason=reason,
                status="canceled" if status == "canceled" else "interrupted",
            )

    def stop(self, generation: Generation, *, reason: str, status: StopStatus) -> None:
        """Stop now: flush first, then nothing more of it, then its completion as heard."""
        core = self.core
        generation.done = True
        core.out.stop_generation(generation.generation_id)
        core.admission.cancel(generation.generation_id)
        core.control(ev.StopAndFlush(generation_id=generation.generation_id, reason=reason))
        _cancel_soon(generation.scope)
        played = core.out.acknowledged_ms(generation.generation_id)
        sent = core.out.playout_of(generation.generation_id).sent_ms
        self._complete(generation, status, generation.heard_text(played), played, sent)

    def finish(self, generation: Generation, status: ev.CompletionStatus) -> None:
        """The generation ran to its end (or failed): complete it with what was played.

        One whose playout stalled (:attr:`Generation.stalled`: the rest of it was shed) did not
        reach the caller whole: it is stopped like an interrupted one (``stop_and_flush``
        ``output_stalled``, so the client drops what it still holds) and completes
        ``interrupted`` with the heard text as acknowledged, never as ``completed``."""
        core = self.core
        if generation.done:
            return
        if generation.stalled and status == "completed":
            self.stop(generation, reason="output_stalled", status="interrupted")
            return
        generation.done = True
        core.out.stop_generation(generation.generation_id)
        track = core.out.playout_of(generation.generation_id)
        played = (
            core.out.acknowledged_ms(generation.generation_id)
            if core.out.playout_acks
            else track.sent_ms
        )
        heard = generation.heard_text(played) if generation.had_audio else generation.text
        self._complete(generation, status, heard, played, track.sent_ms)

    async def settle(self, generation: Generation, *, stopped: bool) -> None:
        """After the generation's work has unwound: record what it delivered, then let the
        machine move on (``OUTPUT_STOPPED`` after a stop, ``RESPONSE_COMPLETED`` otherwise)."""
        core = self.core
        if core.coordinator is not None:
            with anyio.CancelScope(shield=True):
                await core.coordinator.record_delivery(
                    generation.generation_id,
                    heard_text=generation.heard,
                    complete=generation.status == "completed",
                    observable=core.out.playout_acks and generation.had_audio,
                )
        core.fire(Event.OUTPUT_STOPPED if stopped else Event.RESPONSE_COMPLETED)
        if stopped and core.caller_speaking:  # the caller who took the turn is still talking
            core.fire(Event.SPEECH_STARTED)
        if core.stt_down():  # the table says whether the session goes to text mode now
            core.fire(Event.STT_DOWN)

    def _complete(
        self,
        generation: Generation,
        status: ev.CompletionStatus,
        heard: str,
        played: float,
        sent: float,
    ) -> None:
        core = self.core
        generation.status = status
        generation.heard = heard
        if heard:
            core.remember(Message(role="assistant", content=heard))
        core.control(
            ev.ResponseCompleted(
                generation_id=generation.generation_id, status=status, heard_text=heard
            )
        )
        core.recorder.generation(
            core.ctx.session_id,
            generation.generation_id,
            generation.turn_id,
            status=status,
            generated_text=generation.text,
            heard_text=heard,
            played_ms=played,
            sent_ms=sent,
        )
        core.metrics.count("generations", status=status)


def _cancel_soon(scope: anyio.CancelScope) -> None:
    """Cancel the generation's work from a loop callback rather than from the calling task.

    Nothing of the generation can reach the client any more (its frames are refused from the
    line above), so the cancellation may land one loop iteration later. Called inside a task,
    anyio writes that task's repr into the cancel reason, which costs tens of microseconds on
    the barge-in path; from a callback there is no calling task.
    """
    try:
        asyncio.get_running_loop().call_soon(scope.cancel)
    except RuntimeError:  # no running asyncio loop (another backend): cancel here
        scope.cancel()
