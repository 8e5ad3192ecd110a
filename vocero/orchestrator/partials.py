"""Partial transcripts while the caller speaks: after every ``partial_interval_ms`` of new
speech (the speech-to-text runner's own cadence; none when it is 0), what was said so far is
transcribed, one partial at a time, and sent to the client as ``transcript.partial.v1``. A
partial of an utterance that ended meanwhile is not sent."""

from __future__ import annotations

from collections.abc import Callable

import anyio

from vocero.contracts import events as ev
from vocero.orchestrator.core import SessionCore
from vocero.orchestrator.listening import Utterance
from vocero.orchestrator.output import OutFrame


class Partials:
    def __init__(
        self, core: SessionCore, tg: anyio.abc.TaskGroup, current: Callable[[Utterance], bool]
    ) -> None:
        self.core = core
        self._tg = tg
        self._current = current
        """Whether an utterance is still the one being heard."""

    def maybe(self, utterance: Utterance) -> None:
        """Start a partial when ``utterance`` grew by another interval and none is running."""
        interval = self.core.runners.stt.partial_interval_ms
        if interval <= 0 or utterance.partial_running:
            return
        if utterance.voiced_ms < max(utterance.next_partial_ms, interval):
            return
        utterance.partial_running = True
        utterance.next_partial_ms = utterance.voiced_ms + interval
        self._tg.start_soon(self._partial, utterance)

    async def _partial(self, utterance: Utterance) -> None:
        core = self.core
        try:
            result = await core.runners.stt.partial(
                bytes(utterance.audio), sample_rate=16000, locale=core.ctx.effective.locale
            )
        except Exception:
            return
        finally:
            utterance.partial_running = False
        if result.text and self._current(utterance):
            frame = OutFrame(
                payload=ev.Transcript(turn_id="", text=result.text), envelope=ev.TranscriptPartialV1
            )
            core.out.partial(frame)
