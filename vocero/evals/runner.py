"""``vocero eval``: groups the scenarios by sim script, runs each group on one server."""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vocero.evals.audio import Voice
from vocero.evals.client import Caller, TurnResult
from vocero.evals.expect import Context, Failure, check_scenario, check_turn
from vocero.evals.format import Scenario
from vocero.evals.phone import PhoneCaller, phone_unchecked
from vocero.evals.proxy import RecordingProxy
from vocero.evals.server import Server, ServerError, read_taps, tap_profiles

TURN_TIMEOUT_S = {"sim": 30.0, "cpu": 180.0, "gb10": 120.0}
"""How long one turn's answer may take before the turn fails."""


@dataclass
class ScenarioResult:
    scenario: Scenario
    turns: list[TurnResult] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    session_id: str = ""
    started_at: float = 0.0
    duration_s: float = 0.0
    error: str = ""
    tools: list[dict[str, Any]] = field(default_factory=list)
    units: list[dict[str, Any]] = field(default_factory=list)
    operations: list[dict[str, Any]] = field(default_factory=list)
    followups: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    server_problems: list[str] = field(default_factory=list)
    """Warnings, errors and tracebacks the server logged while the scenario ran."""
    server_log: str = ""
    """The file name of the server's whole log in the report folder (``--report``)."""
    unchecked: list[str] = field(default_factory=list)
    """``--transport twilio``: the expectations the phone cannot check (the scenario is not
    run, and fails)."""

    @property
    def passed(self) -> bool:
        return not self.failures and not self.error

    @property
    def label(self) -> str:
        return f"{Path(self.scenario.file).stem}/{self.scenario.name}"


def run_all(scenarios: list[Scenario], args: argparse.Namespace,
            zones: dict[str, str], *, phones: dict[str, str] | None = None,
            voice: Voice | None = None) -> list[ScenarioResult]:
    """``phones``: each caller token's number, for ``--transport twilio``; ``voice``: the
    caller's voice in audio mode (Piper when None)."""
    phone = getattr(args, "transport", "websocket") == "twilio"
    groups: dict[str, list[Scenario]] = {}
    for scenario in scenarios:
        key = scenario.sim_path if args.runners == "sim" else ""
        groups.setdefault(key, []).append(scenario)
    if args.mode == "audio" and voice is None:
        voice = Voice()
    results: list[ScenarioResult] = []
    with tempfile.TemporaryDirectory(prefix="vocero-eval-") as tmp:
        for number, (sim, group) in enumerate(groups.items()):
            work = Path(tmp) / f"server{number}"
            work.mkdir()
            proxies: list[RecordingProxy] = []
            aliases = tap_profiles(Path(args.profiles).resolve(), work / "profiles",
                                   work / "taps", proxies)
            server = Server(runners=args.runners, profiles=work / "profiles",
                            identities=Path(args.identities).resolve(), work=work,
                            sim_script=sim, telephony=phone)
            try:
                server.wait_ready()
                for scenario in group:
                    unchecked = phone_unchecked(scenario) if phone else []
                    if unchecked:  # not run: a pass would claim what was never checked
                        result = ScenarioResult(scenario, unchecked=unchecked, failures=[
                            Failure("transport", "expectations the phone can check",
                                    "not checkable over the phone: " + "; ".join(unchecked))])
                        _print(result)
                        results.append(result)
                        continue
                    result = run_scenario(scenario, server, work / "taps", aliases, args,
                                          zones.get(scenario.caller or "", "UTC"), voice,
                                          phone=(phones or {}).get(scenario.caller or ""))
                    result.server_log = f"server-{number}.log"
                    _print(result)
                    results.append(result)
            except ServerError as exc:
                print(f"vocero eval: {exc}", file=sys.stderr)
                for scenario in group[len([r for r in results if r.scenario in group]):]:
                    result = ScenarioResult(scenario, error="vocero serve did not start")
                    _print(result)
                    results.append(result)
            finally:
                server.stop()
                for proxy in proxies:
                    proxy.stop()
                if args.report:
                    _keep_log(server, Path(args.report) / f"server-{number}.log")
    return results


def _keep_log(server: Server, target: Path) -> None:
    """The server's whole log beside the report: the temporary folder goes with the run."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if server.log_path.exists():
        shutil.copyfile(server.log_path, target)


def run_scenario(scenario: Scenario, server: Server, taps: Path,
                 aliases: dict[str, set[tuple[str, str]]], args: argparse.Namespace,
                 zone: str, voice: Voice | None, phone: str | None = None) -> ScenarioResult:
    """``phone``: the caller's number, to ring it over the phone path (``--transport
    twilio``); None: the WebSocket."""
    result = ScenarioResult(scenario, started_at=time.time())
    mark = server.lines
    ctx = Context(zone=zone, now=datetime.now(UTC), aliases=aliases)
    timeout_s = TURN_TIMEOUT_S.get(args.runners, 60.0)
    caller: Caller | PhoneCaller
    if phone is not None:
        caller = PhoneCaller(server, public_url=server.base,
                             auth_token=server.twilio_auth_token, phone=phone,
                             timeout_s=timeout_s, voice=voice)
    else:
        caller = Caller(server.ws_url, scenario.caller or "", locale=scenario.locale,
                        timeout_s=timeout_s, mode=args.mode, voice=voice)
    try:
        caller.open()
        result.session_id = caller.session_id
        last_answer = ""
        for index, turn in enumerate(scenario.turns, start=1):
            done = TurnResult(index=index, say=turn.say or "")
            result.turns.append(done)
            if turn.if_asked is not None and not re.search(turn.if_asked, last_answer,
                                                           re.IGNORECASE):
                done.skipped = True
                if turn.otherwise == "fail":
                    result.failures.append(Failure(
                        "if_asked", f"the agent asks /{turn.if_asked}/",
                        repr(last_answer) if last_answer else "nothing", turn=index))
                    break
                continue
            pause = (turn.pause_ms_after_words.words, turn.pause_ms_after_words.ms) if (
                turn.pause_ms_after_words) else (0, 0)
            caller.say(done, text=turn.say,
                       confirm="confirm" if turn.confirm else "reject" if turn.reject else None,
                       barge_in_after_ms=turn.barge_in_after_ms, then=turn.then, pause=pause,
                       noise_db=turn.noise_db)
            last_answer = done.heard_text or last_answer
            if done.timed_out:
                result.failures.append(Failure(
                    "answer", "the answer completes", f"nothing more after "
                    f"{caller.timeout_s:.0f} s (state {caller._state()})", turn=index))
                break
    except Exception as exc:
        result.error = f"{type(exc).__name__}: {exc}"
        traceback.print_exc(limit=3, file=sys.stderr)
    finally:
        caller.close()
    result.duration_s = time.time() - result.started_at
    result.server_problems = server.problems_since(mark)
    if result.session_id:
        _collect(result, server, taps, aliases)
        for played, spec in zip(result.turns, scenario.turns, strict=False):
            if spec.expect is not None and not played.skipped and not played.timed_out:
                result.failures += check_turn(spec.expect, played, ctx)
        if scenario.expect is not None and not result.error:
            result.failures += check_scenario(
                scenario.expect, turns=result.turns, tools=result.tools, units=result.units,
                operations=result.operations, followups=result.followups,
                findings=result.findings, ctx=ctx)
    return result


def _collect(result: ScenarioResult, server: Server, taps: Path,
             aliases: dict[str, set[tuple[str, str]]]) -> None:
    """The operator API's rows of the session, and the tap records of its time window."""
    session = result.session_id
    result.units = server.get("/v1/units", session_id=session)
    result.operations = server.get("/v1/operations", session_id=session)
    result.followups = server.get("/v1/followups", session_id=session)
    result.findings = server.get("/v1/findings", session_id=session)
    end = result.started_at + result.duration_s
    subject = str(server.get_json(f"/v1/sessions/{session}").get("identity", {})
                  .get("subject_ref", ""))
    tapped = {p.stem for p in taps.glob("*.jsonl")}
    records = [r for r in read_taps(taps) if _of_subject(r, subject)]
    records += untapped_calls(result, tapped, aliases)
    result.tools = sorted((r for r in records if result.started_at <= r.get("at", 0) <= end),
                          key=lambda r: r.get("at", 0.0))
    for turn in result.turns:
        if not turn.sent_at:
            continue
        generations = set(turn.generations)
        turn.units = [u for u in result.units if u.get("generation_id") in generations]
        turn.tools = [r for r in result.tools
                      if turn.sent_at <= r.get("at", 0) <= (turn.ended_at or end)]


def _of_subject(record: dict[str, Any], subject: str) -> bool:
    """A call made for the session's caller (``io.vocero/principal``); one without a principal,
    or a session whose reference is unknown, is judged by its time window alone."""
    principal = (record.get("meta") or {}).get("io.vocero/principal") or {}
    theirs = principal.get("subject_ref") if isinstance(principal, dict) else None
    return not subject or not theirs or theirs == subject


def untapped_calls(result: ScenarioResult, tapped: set[str],
                   aliases: dict[str, set[tuple[str, str]]]) -> list[dict[str, Any]]:
    """Calls no tap or proxy sees (Vocero's built-ins), from Vocero's own records: the session's
    operations, with the canonical arguments the operation lists (a write's; a read lists
    none), else the ones its read-back showed (docs/eval.md)."""
    fields = {c.get("proposal_id"): c.get("fields") or {}
              for turn in result.turns for c in turn.confirmations}
    calls: list[dict[str, Any]] = []
    for operation in result.operations:
        pairs = aliases.get(str(operation.get("tool", "")), set())
        server = next(iter(sorted(pairs)), ("", ""))[0]
        if not server or server in tapped:
            continue
        status = str(operation.get("status", ""))
        calls.append({
            "server": server, "tool": str(operation.get("resolved_tool") or operation["tool"]),
            "arguments": _arguments(operation) or fields.get(operation.get("proposal_id"), {}),
            "meta": {"io.vocero/operation_id": operation.get("operation_id")},
            "at": _epoch(str(operation.get("created_at", ""))),
            "status": "ok" if status == "committed" else "error" if status in (
                "rejected", "failed", "unknown") else status,
            "source": "vocero",
        })
    return calls


def _arguments(operation: dict[str, Any]) -> dict[str, Any]:
    """An operation's canonical ``arguments`` (``/v1/operations``): none for a read, and none
    once purged (``{"$purged": true}``)."""
    arguments = operation.get("arguments")
    if not isinstance(arguments, dict) or "$purged" in arguments:
        return {}
    return arguments


def _epoch(text: str) -> float:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _print(result: ScenarioResult) -> None:
    if result.passed:
        print(f"PASS {result.label} ({result.duration_s:.1f} s)")
        return
    if result.error:
        print(f"FAIL {result.label}: {result.error}")
        if result.server_problems:
            print("  the server logged:")
            print("\n".join(f"    {line}" for line in result.server_problems))
    for failure in result.failures:
        print(failure_text(result, failure))


def failure_text(result: ScenarioResult, failure: Failure) -> str:
    """docs/eval.md, "A failing expectation": expected, happened, the turn's transcript."""
    where = f" turn {failure.turn}" if failure.turn is not None else ""
    lines = [f"FAIL {result.label}{where}: {failure.what}",
             f"  expected: {failure.expected}", f"  happened: {failure.happened}",
             "  transcript:"]
    turns = [t for t in result.turns if failure.turn is None or t.index == failure.turn]
    lines += transcript_lines(turns)
    return "\n".join(lines)


def transcript_lines(turns: list[TurnResult]) -> list[str]:
    lines: list[str] = []
    for turn in turns:
        if turn.skipped:
            lines.append(f"    (turn {turn.index} skipped: {turn.say})")
            continue
        said = turn.say if turn.action == "say" else f"[{turn.action} button]"
        lines.append(f"    caller: {said}")
        if turn.transcripts and turn.caller_audio:
            lines.append(f"    heard as: {' / '.join(turn.transcripts)}")
        if turn.then:
            lines.append(f"    caller (over the agent): {turn.then}")
        lines.append(f"    agent:  {turn.heard_text or '(nothing)'}")
    return lines
