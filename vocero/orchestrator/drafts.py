"""A prepared answer (ADR-0037, issue 45 item 1): the reply made at a pause, spoken at commit.

At a pause whose early transcription is ready (the speculation of :mod:`.hearing`), while the
agent holds no turn and no question is open, a :class:`Draft` asks the model what it would
answer to those words and plans and synthesizes the first unit of that answer, and holds both.
Nothing of it is admitted, sent, recorded in the history or audited: the model is asked with a
copy of the history plus the draft's words, the unit is planned by a throwaway planner, and its
audio stays in memory.

* The caller goes on (speech grows after the draft started), or the pause's words are
  transcribed anew: the draft is dropped (its model stream and synthesis cancelled).
* The turn is committed: the responder's first model call takes the draft instead of asking
  the model, if the request is the one the draft made (the same history, words, tools and open
  proposal); its outputs are replayed (still streaming, if the model had not finished), and the
  speaker takes the held audio for a first unit that is planned with the same speech. Any
  difference and the draft is dropped and the model asked as always.
* A tool the draft's model asks for is only a decision: the replayed intent is proposed, gated
  and run by the committed turn, like any other (no tool runs before commit, not even a read).

At most one draft per session exists; a new one replaces it. Every draft made, used and dropped
is counted (``drafts`` by ``outcome``, and :class:`DraftCounts`, which the bench reads), with
the model calls and syntheses it cost.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import anyio
import structlog

from vocero.contracts.domain import VoiceRef
from vocero.contracts.ports import (
    AlignedTts,
    ClaimAnswer,
    LlmOutput,
    LlmRequest,
    Message,
    SpokenThrough,
    TextChunk,
    ToolIntent,
)
from vocero.orchestrator.core import SessionCore
from vocero.orchestrator.generation import Generation
from vocero.orchestrator.merging import TurnMerge
from vocero.speech import PlannedUnit, UnitPlanner

log = structlog.get_logger("vocero.drafts")

MAX_OUTPUTS = 512
"""Model outputs one draft holds (a word a chunk: far more than an answer's word budget); a
model that says more is cut there and the draft is dropped."""
MAX_HELD_CHUNKS = 2_048
"""Audio chunks of the first unit one draft holds (minutes of audio at any chunk size)."""

T = TypeVar("T")


class DraftIncomplete(Exception):
    """A draft that did not finish (``reason``: ``cancelled``, ``too_long``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class RecoverySettings:
    """How a session recovers from a wrong guess at the end of a turn (ADR-0037)."""

    drafts: bool = True
    """Prepare the answer at a pause (``--prepared-answers off`` turns it off)."""
    merge_window_ms: float = 1_500.0
    """A caller who takes the turn back this soon after it was committed is joined to it."""


@dataclass(slots=True)
class DraftCounts:
    """What the session's drafts did and cost, since it began."""

    made: int = 0
    used: int = 0
    dropped: int = 0
    llm_calls: int = 0
    syntheses: int = 0
    held_audio_used: int = 0
    """Answers whose first unit was spoken from the draft's audio."""
    dropped_by: dict[str, int] = field(default_factory=dict)


class Held(Generic[T]):
    """A bounded list that grows while a task fills it, read (and waited on) by a replay."""

    def __init__(self, cap: int) -> None:
        self.items: list[T] = []
        self._cap = cap
        self._grew = anyio.Event()
        self.done = False
        self.error: BaseException | None = None

    def add(self, item: T) -> bool:
        """Hold ``item``; False once the list is full (the filler must stop)."""
        if len(self.items) >= self._cap:
            return False
        self.items.append(item)
        self._wake()
        return True

    def close(self, error: BaseException | None = None) -> None:
        self.done = True
        self.error = error
        self._wake()

    def _wake(self) -> None:
        self._grew.set()
        self._grew = anyio.Event()

    async def replay(self) -> AsyncIterator[T]:
        index = 0
        while True:
            while index < len(self.items):
                yield self.items[index]
                index += 1
            if self.done:
                if self.error is not None:
                    raise self.error
                return
            await self._grew.wait()


@dataclass(eq=False)
class Draft:
    words: str
    request: LlmRequest
    voice: VoiceRef
    outputs: Held[LlmOutput] = field(default_factory=lambda: Held(MAX_OUTPUTS))
    audio: Held[bytes | SpokenThrough] | None = None
    speech: str = ""
    """What the TTS was given for the first unit (its speech form)."""
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    taken: bool = False
    audio_taken: bool = False
    counts: DraftCounts | None = None

    def audio_for(
        self, speech: str, voice: VoiceRef
    ) -> AsyncIterator[bytes | SpokenThrough] | None:
        """The held audio of the first unit, once, for a unit that says exactly the same."""
        if self.audio is None or self.audio_taken or speech != self.speech or voice != self.voice:
            return None
        self.audio_taken = True
        if self.counts is not None:
            self.counts.held_audio_used += 1
        return self.audio.replay()


def same_request(draft: LlmRequest, now: LlmRequest) -> bool:
    """The model would be asked the same thing (the clock's reading aside)."""
    return (
        draft.messages == now.messages
        and draft.tools == now.tools
        and draft.mode == now.mode
        and draft.pending == now.pending
        and draft.max_words == now.max_words
        and draft.timezone == now.timezone
        and draft.locale == now.locale
        and draft.claims == now.claims
    )


class Drafts:
    """The session's one draft at most: made at a pause, dropped or taken at commit."""

    def __init__(
        self,
        core: SessionCore,
        tg: anyio.abc.TaskGroup,
        request: Callable[[], LlmRequest],
        *,
        question_open: Callable[[], bool],
        settings: RecoverySettings,
    ) -> None:
        self.core = core
        self._tg = tg
        self._request = request
        self._question_open = question_open
        self.enabled = settings.drafts
        self.merge: TurnMerge | None = None
        """Whether the words are a continuation, and of which turn."""
        self.current: Draft | None = None
        self.counts = DraftCounts()

    # ------------------------------------------------------------------ from hearing

    def words(self, text: str, utterance_id: str = "") -> None:
        """The early transcription of the caller's current pause is ready: prepare its answer
        (unless the agent holds the turn, a question is open, or these words have one). The
        words of a caller who took the turn back are prepared as the whole request they will be
        committed as (:mod:`.merging`): the first part's line out of the history, its question
        withdrawn, the words joined."""
        core = self.core
        text = text.strip()
        if not self.enabled or not text:
            return
        first = self.merge.continuation(utterance_id) if self.merge is not None else None
        if first is not None:
            text = f"{first.text} {text}"
        if core.generations.live() is not None or (first is None and self._question_open()):
            return
        current = self.current
        if current is not None and current.words == text:
            return
        self.drop("replaced")
        base = self._request()
        messages = [m for m in base.messages if first is None or m is not first.message]
        request = LlmRequest(
            messages=[*messages, Message(role="user", content=text)],
            tools=base.tools,
            max_words=base.max_words,
            mode=base.mode,
            pending=base.pending if first is None else None,
            timezone=base.timezone,
            now=base.now,
            locale=base.locale,
            claims=base.claims,
            refused=base.refused,
        )
        draft = Draft(words=text, request=request, voice=core.ctx.voice, counts=self.counts)
        self.current = draft
        self.counts.made += 1
        core.metrics.count("drafts", outcome="made")
        self._tg.start_soon(self._prepare, draft)

    def resumed(self) -> None:
        """The caller spoke on: the words the draft answers are not the turn."""
        if self.current is not None:
            self.drop("resumed")

    # ------------------------------------------------------------------- from turns

    def committed(self, text: str) -> None:
        """A turn was committed with ``text``: a draft of other words is of no use."""
        current = self.current
        if current is not None and current.words != text.strip():
            self.drop("words_changed")

    def take(self, request: LlmRequest) -> Draft | None:
        """The committed turn's first model call: the draft, if it was made for exactly this
        request (it is then no longer the session's draft); otherwise it is dropped."""
        draft = self.current
        if draft is None:
            return None
        self.current = None
        if not same_request(draft.request, request):
            self._dropped(draft, "request_changed")
            return None
        if draft.outputs.done and draft.outputs.error is not None:
            self._dropped(draft, "failed")
            return None
        draft.taken = True
        self.counts.used += 1
        audio = draft.audio
        self.core.metrics.count(
            "drafts", outcome="used", outputs="done" if draft.outputs.done else "streaming",
            audio="none" if audio is None else "done" if audio.done else "synthesizing",
        )
        log.info("draft.used", session_id=self.core.ctx.session_id,
                 ready=draft.outputs.done, audio=draft.audio is not None)
        return draft

    def drop(self, reason: str) -> None:
        draft, self.current = self.current, None
        if draft is not None:
            self._dropped(draft, reason)

    def _dropped(self, draft: Draft, reason: str) -> None:
        draft.scope.cancel()
        counts = self.counts
        counts.dropped += 1
        counts.dropped_by[reason] = counts.dropped_by.get(reason, 0) + 1
        self.core.metrics.count("drafts", outcome="dropped", reason=reason)
        log.info("draft.dropped", session_id=self.core.ctx.session_id, reason=reason)

    # ------------------------------------------------------------------- the work

    async def _prepare(self, draft: Draft) -> None:
        """Ask the model, plan the first unit as it comes, synthesize it; hold everything."""
        core = self.core
        error: BaseException | None = DraftIncomplete("cancelled")
        with draft.scope:
            try:
                async with anyio.create_task_group() as tg:
                    self.counts.llm_calls += 1
                    core.metrics.count("draft_llm_calls")
                    planner = self._planner(draft)
                    first: PlannedUnit | None = None
                    # As the responder's: each output must come within llm_s of the last.
                    with core.clock.deadline(core.timeouts.llm_s) as deadline:
                        async for output in core.runners.llm.generate(draft.request):
                            if not draft.outputs.add(output):
                                raise DraftIncomplete("too_long")
                            if first is None:
                                first = _first_unit(planner, output)
                                if first is not None:
                                    tg.start_soon(self._synthesize, draft, first)
                            if isinstance(output, ToolIntent):
                                break  # the decision: nothing runs before the commit
                            deadline.extend()
                    if first is None:  # the answer's one sentence ended with the stream
                        unit = next((u for u in planner.flush() if u.speakable), None)
                        if unit is not None:
                            tg.start_soon(self._synthesize, draft, unit)
                    draft.outputs.close()
                error = None
            except Exception as exc:  # a failed draft: the committed turn asks the model
                error = exc
            finally:
                if not draft.outputs.done:
                    draft.outputs.close(error)
                if draft.audio is not None and not draft.audio.done:
                    draft.audio.close(error)

    async def outputs(self, draft: Draft, request: LlmRequest) -> AsyncIterator[LlmOutput]:
        """What the model answered the draft, as it comes; a draft that failed before it said
        anything is replaced by the model asked now, one that failed later is a model timeout
        (the responder's own handling of one)."""
        said = False
        try:
            async for output in draft.outputs.replay():
                said = True
                yield output
            return
        except Exception as exc:
            if said:
                raise TimeoutError("the prepared answer failed midway") from exc
            log.info("draft.failed", session_id=self.core.ctx.session_id,
                     error=type(exc).__name__)
        self.counts.llm_calls += 1
        async for output in self.core.runners.llm.generate(request):
            yield output

    def _planner(self, draft: Draft) -> UnitPlanner:
        core = self.core
        generation = Generation(generation_id="gen_draft", turn_id="turn_draft")
        planner = core.planner(generation)
        planner.add_caller(draft.words)
        return planner

    async def _synthesize(self, draft: Draft, unit: PlannedUnit) -> None:
        core = self.core
        held: Held[bytes | SpokenThrough] = Held(MAX_HELD_CHUNKS)
        draft.audio, draft.speech = held, unit.speech
        self.counts.syntheses += 1
        error: BaseException | None = None
        tts = core.runners.tts
        try:
            with core.clock.fail_after(core.timeouts.tts_s):
                chunks = (
                    tts.synthesize_aligned(unit.speech, draft.voice)
                    if isinstance(tts, AlignedTts)
                    else tts.synthesize(unit.speech, draft.voice)
                )
                async for chunk in chunks:
                    if not held.add(chunk):
                        raise DraftIncomplete("too_long")
        except Exception as exc:
            error = exc
        finally:
            held.close(error)


def _first_unit(planner: UnitPlanner, output: LlmOutput) -> PlannedUnit | None:
    """The first speakable unit the planner makes of the model's outputs so far."""
    if isinstance(output, TextChunk):
        units = planner.feed(output.text)
    elif isinstance(output, ClaimAnswer):
        units = planner.answer(output)
    else:
        return None
    return next((u for u in units if u.speakable), None)
