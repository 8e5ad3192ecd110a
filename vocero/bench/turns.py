"""``vocero bench turns``: when does each turn rule commit on the paused-speech corpus?

Every clip of ``fixtures/turns`` is heard by the real Silero VAD in 20 ms frames, on the clip's
own clock (offline, so a run is repeatable; each model's measured time is charged on that
clock). Two rules decide when the caller's turn is over:

* ``hangover``: today's rule, the VAD's own end of speech after 480 ms of silence;
* ``judge``: :class:`~vocero.orchestrator.turn_policy.TurnPolicy` with the real end-of-turn
  judge (Smart Turn v3.2 on CPU). With ``words``, Whisper transcribes the utterance at each
  pause of 160 ms, as the session's early transcription does, and the judge weighs that
  transcript once it is ready; ``audio`` runs without transcripts.

A commit before the end of the caller's last word is a premature cut-off. Endpointing latency
is that end to the commit. Model results are cached per clip and instant, so the threshold
sweep replays exactly the judgements the default run paid for.
"""

from __future__ import annotations

import heapq
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio.to_thread
import msgspec

from vocero.bench.stats import percentiles
from vocero.bench.turn_corpus import SAMPLE_RATE, Clip, load_corpus
from vocero.contracts.domain import TurnTaking
from vocero.contracts.ports import Transcription, TurnJudge, TurnVerdict
from vocero.orchestrator.hearing import SPECULATE_AFTER_MS  # when the session transcribes a pause
from vocero.orchestrator.turn_policy import AskJudge, Commit, Decision, TurnPolicy

FRAME_MS = 20
PREROLL_MS = 300
"""The listener keeps this much audio from before speech started (``Listener.preroll_ms``)."""
HANGOVER_MS = 480
_SAMPLES_PER_MS = SAMPLE_RATE // 1000


@dataclass(frozen=True, slots=True)
class Frame:
    end_ms: float
    voiced: bool
    started: bool


@dataclass(slots=True)
class Heard:
    """What the VAD made of one clip."""

    clip: Clip
    hangover_commit_ms: float | None
    frames: list[Frame]
    speech_started_ms: float


@dataclass(frozen=True, slots=True)
class Outcome:
    clip: Clip
    commit_ms: float | None
    reason: str
    judgements: int = 0

    @property
    def premature(self) -> bool:
        return self.commit_ms is not None and self.commit_ms < self.clip.speech_end_ms

    @property
    def latency_ms(self) -> float | None:
        if self.commit_ms is None or self.premature:
            return None
        return self.commit_ms - self.clip.speech_end_ms


class Transcriber(Protocol):
    def heard(self, pcm16: bytes) -> Transcription: ...


class Recogniser:
    """Blocking Whisper on the utterance so far (the early transcription's job)."""

    def __init__(self) -> None:
        from vocero.inference.cpu.settings import CpuSettings, stt_model_path
        from vocero.inference.cpu.stt import WhisperEngine

        settings = CpuSettings.from_env()
        self._engine = WhisperEngine(stt_model_path(settings), threads=settings.cpu_threads())
        self._engine.load()

    def heard(self, pcm16: bytes) -> Transcription:
        from vocero.inference.toolkit.audio import pcm16_to_float

        return self._engine.recognise(pcm16_to_float(pcm16), words=False)


@dataclass
class Oracle:
    """The real models, each answer cached: replays with other thresholds cost nothing."""

    judge: TurnJudge
    recogniser: Transcriber | None
    judge_ms: list[float] = field(default_factory=list)
    stt_ms: list[float] = field(default_factory=list)
    _verdicts: dict[tuple[str, int, str], tuple[TurnVerdict, float]] = field(default_factory=dict)
    _texts: dict[tuple[str, int], tuple[Transcription, float]] = field(default_factory=dict)

    async def verdict(
        self, clip: Clip, start_ms: float, now_ms: float, words: Transcription | None
    ) -> tuple[TurnVerdict, float]:
        text = words.text if words is not None else ""
        key = (clip.id, round(now_ms * 10), text)
        if key not in self._verdicts:
            audio = _slice(clip, start_ms, now_ms)
            started = time.perf_counter()
            verdict = await self.judge.judge(
                audio,
                sample_rate=SAMPLE_RATE,
                transcript=text,
                confidence=None if words is None else words.confidence,
                utterance_id=clip.id,
            )
            cost = (time.perf_counter() - started) * 1000.0
            self.judge_ms.append(cost)
            self._verdicts[key] = (verdict, cost)
        return self._verdicts[key]

    async def transcript(
        self, clip: Clip, start_ms: float, now_ms: float
    ) -> tuple[Transcription, float]:
        assert self.recogniser is not None
        key = (clip.id, round(now_ms * 10))
        if key not in self._texts:
            recogniser, audio = self.recogniser, _slice(clip, start_ms, now_ms)
            started = time.perf_counter()
            heard = await anyio.to_thread.run_sync(recogniser.heard, audio)
            cost = (time.perf_counter() - started) * 1000.0
            self.stt_ms.append(cost)
            self._texts[key] = (heard, cost)
        return self._texts[key]


def _slice(clip: Clip, start_ms: float, end_ms: float) -> bytes:
    pcm = clip.pcm16()
    return pcm[round(start_ms * _SAMPLES_PER_MS) * 2 : round(end_ms * _SAMPLES_PER_MS) * 2]


def hear(clip: Clip, vad_model: str) -> Heard:
    """Run the VAD twice over the clip: with today's hangover (its first end of speech is the
    commit), and with no hangover at all (its voiced frames feed the policy)."""
    from vocero.inference.toolkit.vad import SileroVad, VadSettings

    pcm = clip.pcm16()
    step = FRAME_MS * _SAMPLES_PER_MS * 2
    today = SileroVad(vad_model, VadSettings(min_silence_ms=HANGOVER_MS)).open()
    endless = SileroVad(vad_model, VadSettings(min_silence_ms=10**9)).open()
    frames: list[Frame] = []
    hangover: float | None = None
    started_at = -1.0
    speaking = False
    voiced_before = 0
    for index, offset in enumerate(range(0, len(pcm), step)):
        chunk = pcm[offset : offset + step]
        end_ms = (index + 1) * FRAME_MS
        for event in today.push(chunk):
            if event.kind == "speech_started":
                speaking = True
            elif speaking and hangover is None:
                hangover = end_ms
        events = endless.push(chunk)
        started = any(e.kind == "speech_started" for e in events)
        if started and started_at < 0:
            started_at = next(e.at_ms for e in events if e.kind == "speech_started")
        frames.append(Frame(end_ms, endless.voiced_ms != voiced_before, started))
        voiced_before = endless.voiced_ms
    return Heard(clip, hangover, frames, max(0.0, started_at))


@dataclass(order=True)
class _Due:
    at_ms: float
    order: int
    kind: str = field(compare=False)
    ticket: int = field(compare=False, default=0)
    verdict: TurnVerdict | None = field(compare=False, default=None)
    words: Transcription | None = field(compare=False, default=None)


class Replay:
    """One clip through the policy: frames, verdicts and transcripts in time order."""

    def __init__(
        self, heard: Heard, settings: TurnTaking, oracle: Oracle, words: bool, timed: bool = True
    ) -> None:
        self.heard, self.oracle, self.words = heard, oracle, words
        self.timed = timed  # charge each model answer its measured time, or none
        self.policy = TurnPolicy(settings)
        self.start_ms = max(0.0, heard.speech_started_ms - PREROLL_MS)
        self.queue: list[_Due] = []
        self.order = 0
        self.transcript: Transcription | None = None
        self.speculating = False
        self.judgements = 0

    def _push(self, due: _Due) -> None:
        self.order += 1
        due.order = self.order
        heapq.heappush(self.queue, due)

    async def run(self) -> Outcome:
        clip = self.heard.clip
        begun = False
        for frame in self.heard.frames:
            if not begun:
                if frame.started:
                    begun = True
                    self.policy.begin(frame.end_ms)
                continue
            while self.queue and self.queue[0].at_ms <= frame.end_ms:
                commit = await self._deliver(heapq.heappop(self.queue))
                if commit is not None:
                    return self._outcome(commit)
            if frame.voiced:
                self.transcript, self.speculating = None, False
                self.queue = [d for d in self.queue if d.kind != "words"]
                heapq.heapify(self.queue)
            commit = await self._act(self.policy.frame(frame.end_ms, frame.voiced), frame.end_ms)
            if commit is not None:
                return self._outcome(commit)
            await self._maybe_speculate(frame.end_ms)
        return Outcome(clip, None, "never", self.judgements)

    def _outcome(self, commit: Commit) -> Outcome:
        return Outcome(self.heard.clip, commit.at_ms, commit.reason, self.judgements)

    async def _maybe_speculate(self, now_ms: float) -> None:
        silence = now_ms - self.policy.last_voiced_ms
        if not self.words or self.speculating or silence < SPECULATE_AFTER_MS:
            return
        self.speculating = True
        self.policy.transcribing()
        words, cost = await self.oracle.transcript(self.heard.clip, self.start_ms, now_ms)
        self._push(_Due(now_ms + (cost if self.timed else 0.0), 0, "words", words=words))

    async def _deliver(self, due: _Due) -> Commit | None:
        if due.kind == "words":
            self.transcript = due.words
            if due.words is None or not due.words.text:
                self.policy.no_words()  # as a session does with an empty transcript
                return None
            return await self._act(self.policy.words(due.at_ms), due.at_ms)
        assert due.verdict is not None
        return await self._act(self.policy.verdict(due.ticket, due.verdict, due.at_ms), due.at_ms)

    async def _act(self, decision: Decision | None, now_ms: float) -> Commit | None:
        if isinstance(decision, Commit):
            return decision
        if isinstance(decision, AskJudge):
            self.judgements += 1
            clip = self.heard.clip
            verdict, cost = await self.oracle.verdict(
                clip, self.start_ms, decision.audio_end_ms, self.transcript
            )
            cost = cost if self.timed else 0.0
            self._push(_Due(now_ms + cost, 0, "verdict", decision.ticket, verdict))
        return None


def summary(outcomes: list[Outcome]) -> dict[str, Any]:
    complete = [o for o in outcomes if not o.clip.paused]
    paused = [o for o in outcomes if o.clip.paused]
    reasons: dict[str, int] = {}
    for o in outcomes:
        reasons[o.reason] = reasons.get(o.reason, 0) + 1
    return {
        "premature_cut_off_rate_paused": _rate(paused),
        "premature_cut_off_rate_complete": _rate(complete),
        "premature_cut_offs": sorted(o.clip.id for o in outcomes if o.premature),
        "endpointing_ms_complete": percentiles(_latencies(complete)),
        "endpointing_ms_paused": percentiles(_latencies(paused)),
        "commits_by_reason": dict(sorted(reasons.items())),
        "judgements_per_utterance": round(
            sum(o.judgements for o in outcomes) / max(1, len(outcomes)), 2
        ),
    }


def _rate(outcomes: list[Outcome]) -> float:
    return round(sum(o.premature for o in outcomes) / max(1, len(outcomes)), 4)


def _latencies(outcomes: Iterable[Outcome]) -> list[float]:
    return [o.latency_ms for o in outcomes if o.latency_ms is not None]


SWEEP: tuple[dict[str, float], ...] = (
    *(
        {"judge_window_ms": window, "audio_probability": audio}
        for window in (0, 200, 300)
        for audio in (0.9, 0.95, 0.97, 0.99, 1.01)
    ),
    *({"complete_probability": words} for words in (0.3, 0.7, 0.9)),
)
"""Settings tried besides the defaults (1.01: never commit on the audio alone)."""


async def run_turns(limit: int | None = None, sweep: bool = True) -> dict[str, Any]:
    from vocero.inference.cpu.settings import CpuSettings, llm_model_path, vad_model_path
    from vocero.inference.toolkit.turn import EndOfTurnJudge, SmartTurnEngine, turn_model_path
    from vocero.inference.toolkit.turn_words import SmolWordsEngine, words_model_path

    load_before = os.getloadavg()[0]
    clips = load_corpus(kind="complete", limit=limit) + load_corpus(kind="paused", limit=limit)
    settings = CpuSettings.from_env()
    threads = settings.cpu_threads()
    words = words_model_path(llm_model_path(settings))
    judge = EndOfTurnJudge(
        SmartTurnEngine(turn_model_path(), threads=threads),
        words=SmolWordsEngine(words, n_threads=threads) if words else None,
    )
    await judge.warm_up()
    recogniser = await anyio.to_thread.run_sync(Recogniser)
    oracle = Oracle(judge, recogniser)
    vad = vad_model_path(settings)
    heard = [await anyio.to_thread.run_sync(hear, clip, vad) for clip in clips]
    hangover = [Outcome(h.clip, h.hangover_commit_ms, "hangover") for h in heard]
    defaults = TurnTaking()

    async def policy(s: TurnTaking, words: bool, timed: bool = True) -> list[Outcome]:
        return [await Replay(h, s, oracle, words, timed).run() for h in heard]

    judged = await policy(defaults, words=True)
    judge_ms = list(oracle.judge_ms)
    audio_only = await policy(defaults, words=False)
    instant = await policy(defaults, words=True, timed=False)
    result: dict[str, Any] = {
        "benchmark": "turns",
        "measure": "commit time vs the end of the caller's last word, real Silero VAD in 20 ms "
        "frames on the clip's clock; premature = committed before the last word ended",
        "corpus": _corpus_facts(clips),
        "threads": threads,
        "load_average_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "hangover_480ms": summary(hangover),
        "judge": summary(judged),
        "judge_audio_only": summary(audio_only),
        "judge_models_instant": summary(instant),
        "note": "judge and judge_audio_only charge every model answer its measured time on this "
        "machine (see load_average_1m); judge_models_instant replays the same answers as if "
        "the models took no time: the decisions alone, free of the machine's load",
        "judge_cost_ms": percentiles(judge_ms),
        "judge_goal_p95_ms": 30,
        "stt_cost_ms": percentiles(oracle.stt_ms),
        "settings": msgspec.to_builtins(defaults),
        "clips": [_clip_row(h, j, a) for h, j, a in zip(hangover, judged, audio_only, strict=True)],
    }
    if sweep:
        result["sweep"] = [await _sweep_point(policy, defaults, change) for change in SWEEP]
    return result


async def _sweep_point(policy: Any, defaults: TurnTaking, change: dict[str, float]) -> Any:
    s = msgspec.structs.replace(defaults, **change)
    point: dict[str, Any] = dict(change)
    for prefix, timed in (("", True), ("instant_", False)):
        facts = summary(await policy(s, True, timed))
        point |= {
            f"{prefix}premature_paused": facts["premature_cut_off_rate_paused"],
            f"{prefix}premature_complete": facts["premature_cut_off_rate_complete"],
            f"{prefix}endpointing_ms_complete_p50": facts["endpointing_ms_complete"].get("p50"),
            f"{prefix}endpointing_ms_complete_p95": facts["endpointing_ms_complete"].get("p95"),
        }
    return point


def _corpus_facts(clips: list[Clip]) -> dict[str, Any]:
    pauses = [c.pause[1] - c.pause[0] for c in clips if c.pause is not None]
    speakers: dict[str, int] = {}
    for c in clips:
        engine = "piper" if c.label.speaker == "piper" else "espeak-ng"
        speakers[engine] = speakers.get(engine, 0) + 1
    return {
        "clips": len(clips),
        "complete": sum(not c.paused for c in clips),
        "paused": len(pauses),
        "pause_ms": [min(pauses, default=0), max(pauses, default=0)],
        "speakers": speakers,
    }


def _clip_row(hangover: Outcome, judged: Outcome, audio_only: Outcome) -> dict[str, Any]:
    def show(o: Outcome) -> str:
        if o.commit_ms is None:
            return "never"
        return f"{o.commit_ms - o.clip.speech_end_ms:+.0f} ms {o.reason}"

    return {
        "id": hangover.clip.id,
        "text": hangover.clip.label.text,
        "hangover": show(hangover),
        "judge": show(judged),
        "judge_audio_only": show(audio_only),
    }
