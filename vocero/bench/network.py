"""``vocero bench network [--per-impairment N]``: the browser protocol through an impaired
path, as the caller experiences it (issue 46 item 2; docs/slo.md "On an impaired network").

A real ``vocero serve`` on the sim runners (the fixture profiles and identities, the evaluation
suite's simulator script plus a story long enough to interrupt) is reached through
:class:`~vocero.bench.netproxy.NetProxy` on loopback, one fresh path per session. The caller is
:class:`~vocero.bench.netplayer.Player`: it plays the audio it receives in real time and reports
``played_ms`` as it plays, through the same path. Per impairment:

* ``none``, ``rtt150`` (75 ms each way), ``rtt150_jitter40`` (± 40 ms), ``..._cap40kBps`` (a
  token bucket below the answer's real-time rate): a story, interrupted once 1 s was played;
* ``..._stall2s``: both directions held 2 s while the story plays, then a second story,
  interrupted;
* ``..._cut_resume``: the connection cut (reset) while the story plays, the session resumed and
  asked what it said; then a write confirmed with "yes" and cut as soon as that "yes" reached
  the server, the session resumed, and the outcome the client is told (the write's status, or
  the question asked again and answered).

Measured on the caller's side: ttfs (text sent → first audio received) and barge-in stop
(``input.speech_started.v1`` sent → ``output.stop_and_flush.v1`` received), p50/p95, and deltas
of a stopped generation received after its stop (stale). Checked: heard text never beyond what
was played (nor, after a cut, the history), pacing within ``max_lead_ms``, a stalled answer not
reported completed unless heard whole, the resumed history as heard, no write run twice.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import yaml
from websockets.asyncio.client import connect

from vocero.app.settings import REPO_ROOT
from vocero.bench.netplayer import Played, Player
from vocero.bench.netproxy import Impairment, NetProxy
from vocero.bench.stats import percentiles

PROFILES = REPO_ROOT / "fixtures" / "profiles"
IDENTITIES = REPO_ROOT / "fixtures" / "identities.yaml"
SIM_SCRIPT = REPO_ROOT / "fixtures" / "eval" / "sim.yaml"
TOKEN = "demo-token"
MAX_LEAD_MS = 400
"""The demo profile's ``max_lead_ms``."""
TOLERANCE_MS = 2.0
MS_PER_CHAR = 15
STORY = ("The fox walked along the river and kept on going, past the mill and the old bridge, "
         "until the evening came down over the valley and the lights of the town went on.")
BARGE_AT_MS = 1000
STALL_AT_MS = 300
STALL_S = 2.0
CUT_AT_MS = 800
TIMEOUT_S = 20.0
LAGGY = Impairment("rtt150_jitter40", one_way_ms=75, jitter_ms=40)

Kind = Literal["barge_in", "stall", "cut"]


@dataclass(frozen=True, slots=True)
class Case:
    impairment: Impairment
    kind: Kind = "barge_in"

    @property
    def name(self) -> str:
        suffix = {"barge_in": "", "stall": "_stall2s", "cut": "_cut_resume"}[self.kind]
        return self.impairment.name + suffix


CASES = (
    Case(Impairment("none")),
    Case(Impairment("rtt150", one_way_ms=75)),
    Case(LAGGY),
    Case(Impairment("rtt150_jitter40_cap40kBps", one_way_ms=75, jitter_ms=40,
                    rate_bytes_s=40_000)),
    Case(LAGGY, "stall"),
    Case(LAGGY, "cut"),
)


@dataclass
class Tally:
    """One case's figures and checks over its sessions."""

    ttfs_ms: list[float] = field(default_factory=list)
    stop_ms: list[float] = field(default_factory=list)
    stale: int = 0
    max_lead_ms: float = 0.0
    violations: dict[str, int] = field(default_factory=dict)
    checks: dict[str, int] = field(default_factory=dict)
    outcomes: dict[str, int] = field(default_factory=dict)

    def check(self, name: str, held: bool) -> None:
        self.checks[name] = self.checks.get(name, 0) + 1
        if not held:
            self.violations[name] = self.violations.get(name, 0) + 1

    def outcome(self, name: str) -> None:
        self.outcomes[name] = self.outcomes.get(name, 0) + 1

    def as_json(self) -> dict[str, Any]:
        return {
            "ttfs_ms": percentiles(self.ttfs_ms, digits=1),
            "barge_in_stop_ms": percentiles(self.stop_ms, digits=1),
            "stale_frames_after_stop": self.stale,
            "max_lead_seen_ms": round(self.max_lead_ms, 1),
            "checks": dict(sorted(self.checks.items())),
            "violations": dict(sorted(self.violations.items())),
            "guarantees_held": not self.violations,
            **({"outcomes": self.outcomes} if self.outcomes else {}),
        }


# ------------------------------------------------------------------------------ the server


def sim_script(folder: Path) -> Path:
    """The evaluation suite's script with a story rule first (and the story's voice rate)."""
    script = yaml.safe_load(SIM_SCRIPT.read_text(encoding="utf-8"))
    script["tts"] = {**script.get("tts", {}), "ms_per_char": MS_PER_CHAR}
    script["llm"] = [{"match": "tell me a story", "reply": STORY}, *script["llm"]]
    path = folder / "sim.yaml"
    path.write_text(yaml.safe_dump(script, sort_keys=False), encoding="utf-8")
    return path


@asynccontextmanager
async def caller(
    proxy: NetProxy, resume_token: str = "", *, token: str = TOKEN
) -> AsyncIterator[Player]:
    """A player connected (or resumed) through ``proxy`` as ``token``'s caller, playing in the
    background until the block ends or the connection is cut."""
    async with connect(f"ws://127.0.0.1:{proxy.port}/v1/realtime", max_size=2**22,
                       compression=None, ping_interval=None, open_timeout=15) as ws, \
            anyio.create_task_group() as tg:
        player = Player(ws)
        tg.start_soon(player.run)
        await player.connect(token, resume_token)
        yield player
        tg.cancel_scope.cancel()


# ------------------------------------------------------------------------------ the checks


def lead_of(played: Played, impairment: Impairment) -> float:
    """The largest audio lead seen over what the server could have known was played."""
    lag = 2 * impairment.min_one_way_s
    return max((received - played.reported_by(at - lag) for at, received in played.arrivals),
               default=0.0)


def heard_within_played(heard: str, played: Played) -> bool:
    most = max((ms for _, ms in played.reports), default=0)
    allowed = played.playable_text(most, MS_PER_CHAR)
    return played.spoken().startswith(heard) and len(heard) <= len(allowed)


def stale_after_stop(player: Player, generation_id: str) -> int:
    frames = [f for _, f in player.frames]
    stop = next((i for i, f in enumerate(frames)
                 if f["type"] == "vocero.output.stop_and_flush.v1"
                 and f["data"]["payload"]["generation_id"] == generation_id), len(frames))
    return sum(1 for f in frames[stop + 1:]
               if f["type"] in ("vocero.response.audio_delta.v1", "vocero.response.text_delta.v1")
               and f["data"]["payload"]["generation_id"] == generation_id)


# ------------------------------------------------------------------------------ the steps


async def ask_story(player: Player, tally: Tally) -> tuple[str, Played]:
    mark = len(player.frames)
    await player.send("input.text.v1", {"text": "tell me a story"})
    asked = player.sent_at["input.text.v1"]
    generation_id = (await player.expect("response.created.v1", after=mark))["generation_id"]
    played: Played = await player.until(lambda: player.generations.get(generation_id))
    await player.until(lambda: played.arrivals)
    tally.ttfs_ms.append((played.arrivals[0][0] - asked) * 1000)
    return generation_id, played


async def interrupt(
    player: Player, generation_id: str, played: Played
) -> tuple[float, dict[str, Any]]:
    """Speak over the answer once ``BARGE_AT_MS`` of it was played: the ms from the speech
    hint to the server's ``stop_and_flush`` as the caller sees it, and the answer's
    ``response.completed.v1``."""
    mark = len(player.frames)
    await player.until(lambda: played.played_ms >= BARGE_AT_MS)
    await player.interrupt(generation_id)
    hinted = player.sent_at["input.speech_started.v1"]
    await player.expect("output.stop_and_flush.v1",
                        lambda p: p["generation_id"] == generation_id, after=mark)
    stopped = player.arrived("output.stop_and_flush.v1",
                             lambda p: p["generation_id"] == generation_id)
    done = await player.expect("response.completed.v1",
                               lambda p: p["generation_id"] == generation_id, after=mark)
    return (stopped - hinted) * 1000, done


async def barge_in(player: Player, generation_id: str, played: Played, tally: Tally,
                   impairment: Impairment) -> None:
    stop_ms, done = await interrupt(player, generation_id, played)
    tally.stop_ms.append(stop_ms)
    stale = stale_after_stop(player, generation_id)
    tally.stale += stale
    tally.check("barge_in_stops", done["status"] == "interrupted" and stale == 0)
    tally.check("heard_within_played", heard_within_played(done["heard_text"], played))
    paced(played, tally, impairment)


def paced(played: Played, tally: Tally, impairment: Impairment) -> None:
    lead = lead_of(played, impairment)
    tally.max_lead_ms = max(tally.max_lead_ms, lead)
    tally.check("paced_within_max_lead", lead <= MAX_LEAD_MS + TOLERANCE_MS)


async def stall_session(proxy: NetProxy, tally: Tally) -> None:
    async with caller(proxy) as player:
        mark = len(player.frames)
        generation_id, played = await ask_story(player, tally)
        await player.until(lambda: played.played_ms >= STALL_AT_MS)
        proxy.stall(STALL_S)
        done = await player.expect("response.completed.v1",
                                   lambda p: p["generation_id"] == generation_id, after=mark)
        tally.outcome(f"stalled_answer_{done['status']}")
        whole = done["heard_text"] == played.spoken()
        flushed = {"generation_id": generation_id, "reason": "output_stalled"} in (
            player.payloads("output.stop_and_flush.v1", mark))
        tally.check("stalled_answer_not_completed_unless_heard_whole",
                    whole if done["status"] == "completed"
                    else done["status"] == "interrupted" and flushed)
        tally.check("heard_within_played", heard_within_played(done["heard_text"], played))
        paced(played, tally, proxy.impairment)
        second, again = await ask_story(player, tally)
        await barge_in(player, second, again, tally, proxy.impairment)


async def cut_session(proxy: NetProxy, server: Any, tally: Tally, day: str) -> None:
    async with caller(proxy) as player:
        applied = player.applied
        mark = len(player.frames)
        generation_id, played = await ask_story(player, tally)
        await player.until(lambda: played.played_ms >= CUT_AT_MS)
        proxy.cut()
    async with caller(proxy, applied["resume_token"]) as again:
        tally.check("resumed_same_session", again.session_id == applied["session_id"])
        body = await anyio.to_thread.run_sync(
            server.get_json, f"/v1/sessions/{applied['session_id']}")
        entry = next((h for h in body.get("history", [])
                      if h.get("generation_id") == generation_id), None)
        heard = str(entry["text"]) if entry is not None else ""
        tally.check("history_within_played", entry is not None
                    and heard_within_played(heard, played))
        mark = len(again.frames)
        await again.send("input.text.v1", {"text": "what did you say"})
        done = await again.expect("response.completed.v1", after=mark)
        said = "".join(p["text"] for p in again.payloads("response.text_delta.v1", mark)
                       if p["generation_id"] == done["generation_id"])
        tally.check("resumed_history_as_heard", said == f"I said: {heard}".strip())
        await write_cut_after_yes(proxy, server, again, tally, day)


async def write_cut_after_yes(proxy: NetProxy, server: Any, player: Player, tally: Tally,
                              day: str) -> None:
    """A write confirmed with "yes", the connection cut as soon as the "yes" reached the server;
    after the resume the client is told the write's status or asked again (then says yes)."""
    await turn(player, "what appointments do I have")
    mark = len(player.frames)
    await player.send("input.text.v1", {"text": f"move appointment APT-1001 to {day} at 3 pm"})
    question = await player.expect("tool.confirmation_required.v1", after=mark)
    await player.expect("response.completed.v1", after=mark)
    session_id, token = player.session_id, player.applied["resume_token"]
    await player.send("input.text.v1", {"text": "yes"})
    await proxy.wait_up_flushed()
    proxy.cut()
    await player.until(lambda: player.closed)
    proposal = question["proposal_id"]
    async with caller(proxy, token) as again:
        told = await again.until(lambda: told_of(again, proposal), timeout_s=TIMEOUT_S)
        tally.outcome(told)
        if told == "asked_again":
            mark = len(again.frames)
            await again.expect("response.completed.v1")  # the read-back, heard again
            await again.send("input.text.v1", {"text": "yes"})
            await again.expect("tool.status.v1", lambda p: p["proposal_id"] == proposal
                               and p["status"] in ("committed", "rejected", "unknown"),
                               after=mark)
    ops = await anyio.to_thread.run_sync(
        lambda: server.get("/v1/operations", session_id=session_id))
    runs = [op for op in ops if op.get("proposal_id") == proposal]
    tally.check("confirmed_write_runs_exactly_once", len(runs) == 1
                and all(op.get("attempts", 1) <= 1 for op in runs))


def told_of(player: Player, proposal_id: str) -> str:
    """What the resumed client was told of the proposal its "yes" answered ("" yet)."""
    if any(p["proposal_id"] == proposal_id for p in player.payloads("tool.status.v1")):
        return "applied"
    if any(p["proposal_id"] == proposal_id
           for p in player.payloads("tool.confirmation_required.v1")):
        return "asked_again"
    return ""


async def turn(player: Player, text: str) -> dict[str, Any]:
    mark = len(player.frames)
    await player.send("input.text.v1", {"text": text})
    return await player.expect("response.completed.v1", after=mark)


# ------------------------------------------------------------------------------ the run


async def run_case(case: Case, server: Any, sessions: int) -> dict[str, Any]:
    tally = Tally()
    days = ("monday", "tuesday", "wednesday", "thursday", "friday")
    for index in range(sessions):
        with anyio.fail_after(TIMEOUT_S * 4):
            async with NetProxy(server.port, case.impairment) as proxy:
                if case.kind == "stall":
                    await stall_session(proxy, tally)
                elif case.kind == "cut":
                    await cut_session(proxy, server, tally, days[index % len(days)])
                else:
                    async with caller(proxy) as player:
                        generation_id, played = await ask_story(player, tally)
                        await barge_in(player, generation_id, played, tally, case.impairment)
    imp = case.impairment
    return {"impairment": {"one_way_ms": imp.one_way_ms, "jitter_ms": imp.jitter_ms,
                           "rate_bytes_s": imp.rate_bytes_s, "event": case.kind},
            "sessions": sessions, **tally.as_json()}


async def run_network(*, sessions: int = 3, cases: tuple[Case, ...] = CASES) -> dict[str, Any]:
    from vocero.evals.server import Server

    work = Path(tempfile.mkdtemp(prefix="vocero-network-"))
    server = Server(runners="sim", profiles=PROFILES, identities=IDENTITIES, work=work,
                    sim_script=str(sim_script(work)))
    results: dict[str, Any] = {}
    started = time.monotonic()
    try:
        await anyio.to_thread.run_sync(server.wait_ready)
        for case in cases:
            results[case.name] = await run_case(case, server, sessions)
    finally:
        await anyio.to_thread.run_sync(server.stop)
    return {
        "benchmark": "network",
        "runners": "sim",
        "path": "asyncio TCP proxy on loopback (no netem qdisc in this kernel)",
        "sessions_per_case": sessions,
        "max_lead_ms": MAX_LEAD_MS,
        "cases": results,
        "guarantees_held": all(r["guarantees_held"] for r in results.values()),
        "seconds": round(time.monotonic() - started, 1),
        "server_problems": server.problems_since(0, limit=20),
    }


async def network(args: argparse.Namespace) -> dict[str, Any]:
    """``vocero bench network [--per-impairment N]`` (3 sessions through each path)."""
    return await run_network(sessions=int(getattr(args, "per_impairment", None) or 3))
