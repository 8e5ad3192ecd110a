"""``vocero bench ttfs --runners cpu``: end of caller speech → first playable audio frame.

The full path on the real runners: Piper speaks each fixture request as 16 kHz caller audio; the
session hears it in real time through VAD (and the silence after it, so endpointing counts), STT
transcribes, the LLM routes, the tool runs through the MCP gateway on the fixture servers, and the
TTS speaks.
Per-stage contributions come from the same metric hooks the server exports.
"""

from __future__ import annotations

import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import yaml

from vocero.app.runtime import open_runtime
from vocero.app.sessions import SessionFactory
from vocero.app.settings import REPO_ROOT, Settings
from vocero.app.stats import percentiles
from vocero.contracts import events as ev
from vocero.contracts.domain import DEFAULT_VOICE
from vocero.orchestrator.output import OutputChannel
from vocero.orchestrator.session import Session

FRAME = 640  # 20 ms of 16 kHz PCM16
QUIET_RMS = 0.01  # -40 dBFS: below this a 20 ms frame is not speech any more
REQUESTS = REPO_ROOT / "fixtures" / "bench" / "ttfs.yaml"


@dataclass
class StageClock:
    """A metrics port that keeps the latest observation of each stage."""

    latest: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def observe_ms(self, name: str, value: float, **labels: str) -> None:
        self.latest[name].append(value)

    def count(self, name: str, amount: float = 1.0, **labels: str) -> None:
        return None


@dataclass
class Turn:
    text: str
    transcript: str = ""
    ttfs_ms: float = 0.0
    stages: dict[str, float] = field(default_factory=dict)
    tools: list[str] = field(default_factory=list)
    reply: str = ""


def caller_audio(texts: list[str]) -> list[bytes]:
    from vocero.inference.cpu.audio import float_to_pcm16, pcm16_to_float, resample
    from vocero.inference.cpu.settings import CpuSettings, tts_model_paths
    from vocero.inference.cpu.tts import PiperEngine

    model, config = tts_model_paths(CpuSettings.from_env())
    piper = PiperEngine(model, config, allow_voice_fallback=False, deterministic=True)
    piper.load()
    spoken = []
    for text in texts:
        pcm = b"".join(piper.render(text, DEFAULT_VOICE))
        audio = resample(pcm16_to_float(pcm), piper.sample_rate, 16_000)
        spoken.append(float_to_pcm16(trim_trailing_quiet(audio)))
    return spoken


def trim_trailing_quiet(audio: Any, threshold: float = QUIET_RMS) -> Any:
    """Cut the quiet tail Piper leaves after a sentence, so that the clock starts at the last
    audible 20 ms of speech and the VAD's whole hangover counts against the measurement."""
    import numpy as np

    frames = len(audio) // 320
    rms = np.sqrt(np.mean(np.square(audio[: frames * 320].reshape(frames, 320)), axis=1))
    loud = np.flatnonzero(rms >= threshold)
    return audio[: (int(loud[-1]) + 1) * 320] if loud.size else audio


async def _one_turn(
    session: Session, out: OutputChannel, audio: bytes, turn: Turn, clock: StageClock
) -> None:
    for key in list(clock.latest):
        clock.latest[key].clear()
    started = time.perf_counter()
    for index, offset in enumerate(range(0, len(audio), FRAME)):
        # The caller speaks in real time: 20 ms of audio every 20 ms, as a browser sends it.
        await anyio.sleep(max(0.0, started + index * 0.02 - time.perf_counter()))
        session.on_audio(audio[offset : offset + FRAME])
    ended = time.perf_counter()
    first_audio: float | None = None
    silence = b"\x00\x00" * (FRAME // 2)
    fed_ms = 0.0
    with anyio.fail_after(60):
        while True:
            # The caller's line stays open: silence arrives in real time until the answer does.
            while first_audio is None and fed_ms < (time.perf_counter() - ended) * 1000:
                session.on_audio(silence)
                fed_ms += 20
            with anyio.move_on_after(0.02):
                frame = await out.receive()
                if frame is None:
                    continue
                payload = frame.payload
                if isinstance(payload, ev.Transcript) and frame.envelope is ev.TranscriptFinalV1:
                    turn.transcript = payload.text
                elif isinstance(payload, ev.ToolStatusChanged) and payload.status == "committed":
                    turn.tools.append(payload.tool_call_id)
                elif isinstance(payload, ev.TextDelta):
                    turn.reply += payload.text + " "
                elif isinstance(payload, ev.AudioOut):
                    if first_audio is None:
                        first_audio = time.perf_counter()
                    session.on_playout(
                        payload.generation_id, int(out.playout_of(payload.generation_id).sent_ms)
                    )
                elif isinstance(payload, ev.ResponseCompleted):
                    break
    turn.ttfs_ms = ((first_audio or time.perf_counter()) - ended) * 1000
    turn.stages = {name: values[0] for name, values in clock.latest.items() if values}


async def run_ttfs(runners: str = "cpu", limit: int | None = None) -> dict[str, Any]:
    requests = yaml.safe_load(REQUESTS.read_text())[:limit]
    spoken = await anyio.to_thread.run_sync(caller_audio, [r["text"] for r in requests])
    workdir = Path(tempfile.mkdtemp(prefix="vocero-ttfs-"))
    settings = Settings(runners=runners, db=f"sqlite+aiosqlite:///{workdir}/ttfs.db")
    turns: list[Turn] = []
    async with open_runtime(settings) as runtime:
        await runtime.ready.wait()
        caller = runtime.identities.authenticate("demo-token")
        assert caller is not None
        profile = runtime.profiles.select(caller)
        for request, audio in zip(requests, spoken, strict=True):
            clock = StageClock()
            out = OutputChannel(
                max_lead_ms=profile.max_lead_ms, playout_acks=True, monotonic=time.monotonic
            )
            handle = await SessionFactory(runtime).open(
                caller, profile, out, turn_mode="server_vad", locale="en-US"
            )
            session = handle.session
            session.core.metrics = clock
            turn = Turn(text=request["text"])
            async with anyio.create_task_group() as tg:
                await tg.start(session.run)
                await _one_turn(session, out, audio, turn, clock)
                session.close()
                tg.cancel_scope.cancel()
            await handle.aclose()
            turns.append(turn)
    return _report(runners, turns)


def _report(runners: str, turns: list[Turn]) -> dict[str, Any]:
    stages = ("stt_final_ms", "llm_ttft_ms", "tool_latency_ms", "tts_ttfa_ms", "ttfs_ms")
    return {
        "benchmark": "ttfs",
        "runners": runners,
        "goal_p95_ms": 1200,
        "measure": "end of caller speech (last 20 ms frame above -40 dBFS) -> first playable "
        "audio frame; endpointing included",
        "ttfs_ms": percentiles([t.ttfs_ms for t in turns]),
        "note": "stages_ms.ttfs_ms is the server's own metric: endpoint detected -> first audio",
        "stages_ms": {
            s: percentiles([t.stages[s] for t in turns if s in t.stages]) for s in stages
        },
        "turns": [
            {
                "said": t.text,
                "heard": t.transcript,
                "tools": len(t.tools),
                "reply": t.reply.strip()[:120],
                "end_of_speech_to_audio_ms": round(t.ttfs_ms, 1),
                **{f"server_{k}": round(v, 1) for k, v in t.stages.items()},
            }
            for t in turns
        ],
    }
