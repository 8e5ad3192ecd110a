"""Benchmarks of the realtime path (docs/architecture.md "The real-time path"). Each returns
JSON-able figures.

* ``overhead``: committed text turn → first ``response.audio_delta.v1`` encoded for the wire,
  simulated runners with zero model time (the orchestration cost alone).
* ``barge-in``: speech start received → ``output.stop_and_flush.v1`` encoded, and how many frames
  of the stopped generation left after it (must be 0).
* ``sessions``: N concurrent WebSocket sessions against a real server subprocess, 50 audio frames
  per second each way; p95 outbound frame lag and the server's memory.
* ``turns``: the paused-speech corpus through today's VAD hangover and the end-of-turn policy
  (``--limit N``: N clips of each kind); see ``bench_turns``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import anyio

from vocero.bench.stats import percentiles
from vocero.contracts import codec
from vocero.contracts import events as ev
from vocero.contracts.domain import DEFAULT_VOICE, AgentProfile, Caller, ProfileMatch
from vocero.contracts.secrets import Secret
from vocero.inference.sim import build_sim_runners
from vocero.inference.sim.script import Rule, SimScript, TtsScript
from vocero.orchestrator.context import SessionContext
from vocero.orchestrator.output import OutFrame, OutputChannel
from vocero.orchestrator.session import Session

REPLY = "Your order is on its way to you now. Is there anything else I can do?"
"""Grounded speech refuses a date no evidence backs ("arrive on Thursday"): the reply says none."""


def _session(
    ms_per_char: float = 0.5, stt: list[str] | None = None
) -> tuple[Session, OutputChannel]:
    script = SimScript(
        stt=stt or [], llm=[Rule(match=".*", reply=REPLY)], tts=TtsScript(ms_per_char=ms_per_char)
    )
    prof = AgentProfile(id="bench", version="1", match=ProfileMatch(tenant="bench"))
    effective = ev.Effective(
        locale="en-US",
        turn_mode="server_vad",
        voice_profile_id="builtin",
        voice_version="default",
        output_sample_rate=16000,
        profile_id="bench",
        profile_version="1",
    )
    caller = Caller(token=Secret("t"), subject="bench", tenant="bench")
    ctx = SessionContext(
        session_id="ses_bench",
        caller=caller,
        profile=prof,
        effective=effective,
        voice=DEFAULT_VOICE,
    )
    out = OutputChannel(max_lead_ms=400, playout_acks=True, monotonic=time.perf_counter)
    return Session(ctx, build_sim_runners(script), out, monotonic=time.perf_counter), out


class _Wire:
    """The outbound pump's work without a socket: take the next frame, stamp it, encode it."""

    def __init__(self, session: Session, out: OutputChannel) -> None:
        self.session, self.out = session, out
        self.sequence = 0
        self.log: list[tuple[float, OutFrame]] = []
        self.first_audio = anyio.Event()
        self.stopped = anyio.Event()
        self.auto_ack = True

    async def pump(self) -> None:
        while True:
            frame = await self.out.receive()
            assert frame is not None
            self.sequence += 1
            codec.encode(
                codec.server_envelope(
                    frame.payload,
                    session_id="ses_bench",
                    sequence=self.sequence,
                    envelope=frame.envelope,
                )
            )
            now = time.perf_counter()
            self.log.append((now, frame))
            payload = frame.payload
            if isinstance(payload, ev.AudioOut):
                if self.auto_ack:
                    played = int(self.out.playout_of(payload.generation_id).sent_ms)
                    self.session.on_playout(payload.generation_id, played)
                self.first_audio.set()
            if isinstance(payload, ev.StopAndFlush):
                self.stopped.set()


async def _turns(iterations: int, interrupt: bool) -> dict[str, Any]:
    samples: list[float] = []
    stale = 0
    session, out = _session()
    wire = _Wire(session, out)
    async with anyio.create_task_group() as tg:
        await tg.start(session.run)
        tg.start_soon(wire.pump)
        for _ in range(iterations):
            wire.first_audio, wire.stopped = anyio.Event(), anyio.Event()
            start = time.perf_counter()
            session.on_text("where is my order")
            await wire.first_audio.wait()
            if not interrupt:
                samples.append((time.perf_counter() - start) * 1000)
            else:
                generation = session.generations.current
                assert generation is not None
                mark = len(wire.log)
                start = time.perf_counter()
                session.on_speech_hint()
                await wire.stopped.wait()
                await anyio.wait_all_tasks_blocked()
                stop_index = next(
                    i
                    for i, (_, f) in enumerate(wire.log[mark:], mark)
                    if isinstance(f.payload, ev.StopAndFlush)
                )
                # When the flush was encoded for the wire (its log stamp), not when this task
                # next ran: the frames queued after it would otherwise count too.
                samples.append((wire.log[stop_index][0] - start) * 1000)
                stale += sum(
                    1
                    for _, f in wire.log[stop_index + 1 :]
                    if isinstance(f.payload, ev.AudioOut | ev.TextDelta)
                    and f.payload.generation_id == generation.generation_id
                )
            await _settle(session)
        session.close()
        tg.cancel_scope.cancel()
    result: dict[str, Any] = {"ms": percentiles(samples), "iterations": iterations}
    if interrupt:
        result["stale_frames_after_stop"] = stale
    return result


async def _settle(session: Session) -> None:
    with anyio.fail_after(10):
        while session.generations.live() is not None:  # noqa: ASYNC110
            await anyio.sleep(0.001)
        await anyio.wait_all_tasks_blocked()


async def overhead(args: argparse.Namespace) -> dict[str, Any]:
    result = await _turns(args.iterations, interrupt=False)
    return {
        "benchmark": "overhead",
        "measure": "committed turn -> first audio delta encoded",
        "goal_p95_ms": 5.0,
        **result,
    }


async def barge_in(args: argparse.Namespace) -> dict[str, Any]:
    result = await _turns(args.iterations, interrupt=True)
    result["false_barge_in"] = await _false_barge_ins(max(10, args.iterations // 10))
    return {
        "benchmark": "barge-in",
        "measure": "speech start received -> stop_and_flush encoded",
        "goal_p95_ms": 2.0,
        **result,
    }


async def sessions(args: argparse.Namespace) -> dict[str, Any]:
    from vocero.bench.sessions import sessions_command

    return await sessions_command(args)


async def ttfs(args: argparse.Namespace) -> dict[str, Any]:
    from vocero.bench.ttfs import run_ttfs
    from vocero.bench.ttfs_drafts import run_both

    half = getattr(args, "half", "tuning")
    endpoints = {
        name: getattr(args, name) for name in (
            "llm_url", "llm_model", "stt_url", "stt_model", "tts_url", "tts_model", "tts_voice",
            "llm_mode", "llm_timeout_s", "stt_timeout_s", "tts_timeout_s",
        ) if getattr(args, name, "")
    }
    async def run(drafts: bool) -> dict[str, Any]:
        return await run_ttfs(
            args.runners,
            limit=args.limit,
            turn_rule=getattr(args, "turn_rule", "judge"),
            halves=("tuning", "heldout") if half == "both" else (half,),
            endpoints=endpoints,
            drafts=drafts,
        )

    return await run_both(run, getattr(args, "drafts", "on"))


async def turns(args: argparse.Namespace) -> dict[str, Any]:
    from vocero.bench.turns import run_turns

    return await run_turns(limit=args.limit)


async def mcp(args: argparse.Namespace) -> dict[str, Any]:
    from vocero.bench.gateway import run_bench

    return await run_bench(calls=args.iterations)


TRIALS = {
    # kind: (speech ms, what the caller said, should it stop the agent)
    "interruption": (400, "stop please", True),
    "backchannel": (400, "mm-hmm", False),
    "noise_blip": (100, "", False),
}


async def _false_barge_ins(per_kind: int) -> dict[str, Any]:
    """Server-VAD barge-in decisions on a mix of real interruptions, backchannels and noise."""
    order = [kind for _ in range(per_kind) for kind in TRIALS]
    transcripts = [TRIALS[k][1] for k in order if TRIALS[k][1]]
    session, out = _session(ms_per_char=40, stt=transcripts)
    wire = _Wire(session, out)
    wire.auto_ack = False
    stops = dict.fromkeys(TRIALS, 0)
    silence = b"\x00\x00" * 320
    tone = b"\x00\x40\x00\xc0" * 160  # a loud square wave, 20 ms
    async with anyio.create_task_group() as tg:
        await tg.start(session.run)
        tg.start_soon(wire.pump)
        for kind in order:
            speech_ms, _, _ = TRIALS[kind]
            wire.first_audio, wire.stopped = anyio.Event(), anyio.Event()
            session.on_text("tell me about my order")
            await wire.first_audio.wait()
            generation = session.generations.current
            assert generation is not None
            for frame in [tone] * (speech_ms // 20) + [silence] * 30:
                session.on_audio(frame)
                await anyio.wait_all_tasks_blocked()
            if out.is_stopped(generation.generation_id) and generation.status == "interrupted":
                stops[kind] += 1
            elif not generation.done:
                session.on_cancel(generation.generation_id)
            await _settle(session)
        session.close()
        tg.cancel_scope.cancel()
    false_stops = stops["backchannel"] + stops["noise_blip"]
    missed = per_kind - stops["interruption"]
    return {
        "trials_per_kind": per_kind,
        "stops": stops,
        "false_barge_in_rate": round(false_stops / (2 * per_kind), 4),
        "missed_interruption_rate": round(missed / per_kind, 4),
    }
