"""Expectations (docs/eval.md): each check of a turn or a scenario gives failures, never raises."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from vocero.evals.client import TurnResult
from vocero.evals.format import Heard, ScenarioExpect, ToolExpect, TurnExpect
from vocero.evals.matchers import describe, matches, normalise


@dataclass
class Failure:
    what: str
    expected: str
    happened: str
    turn: int | None = None
    """1-based turn number; None for the scenario's own expectations."""


@dataclass
class Context:
    """What the checks compare with: the caller's zone, the scenario's start, the tool aliases."""

    zone: str
    now: datetime
    aliases: dict[str, set[tuple[str, str]]]


def check_turn(expect: TurnExpect, turn: TurnResult, ctx: Context) -> list[Failure]:
    failures: list[Failure] = []
    if expect.heard is not None:
        failures += check_heard(expect.heard, turn.heard_text)
    failures += check_claims(expect.claims, expect.no_claims, turn.units)
    failures += check_tools(expect.tools, expect.no_tools, turn.tools, ctx)
    if expect.confirmation is not None:
        failures += check_confirmation(expect.confirmation, turn.confirmations, ctx)
    if expect.ttfa_ms is not None:
        if turn.ttfa_ms is None:
            failures.append(Failure("ttfa_ms", f"first audio within {expect.ttfa_ms} ms",
                                    "no audio"))
        elif turn.ttfa_ms > expect.ttfa_ms:
            failures.append(Failure("ttfa_ms", f"first audio within {expect.ttfa_ms} ms",
                                    f"first audio after {turn.ttfa_ms:.0f} ms"))
    if expect.stopped is not None:
        failures += check_stopped(expect.stopped, turn)
    if expect.barge_in_stop_ms is not None:
        budget = expect.barge_in_stop_ms
        if turn.barge_in_stop_ms is None:
            failures.append(Failure("barge_in_stop_ms", f"stop within {budget} ms of speaking",
                                    "no output.stop_and_flush.v1 after the barge-in"))
        elif turn.barge_in_stop_ms > budget:
            failures.append(Failure("barge_in_stop_ms", f"stop within {budget} ms of speaking",
                                    f"stopped after {turn.barge_in_stop_ms:.0f} ms"))
    for failure in failures:
        failure.turn = turn.index
    return failures


def check_scenario(expect: ScenarioExpect, *, turns: list[TurnResult],
                   tools: list[dict[str, Any]], units: list[dict[str, Any]],
                   operations: list[dict[str, Any]], followups: list[dict[str, Any]],
                   findings: list[dict[str, Any]], ctx: Context) -> list[Failure]:
    failures = check_tools(expect.tools, expect.no_tools, tools, ctx)
    failures += check_claims(expect.claims, expect.no_claims, units)
    failures += check_rows("operations", expect.operations, operations, ctx)
    wanted = [{("due_at" if key == "due" else key): _due(key, value) for key, value in row.items()}
              for row in expect.followups]
    failures += check_rows("followups", wanted, followups, ctx)
    for kind, count in sorted(expect.findings.items()):
        found = [f for f in findings if f.get("kind") == kind]
        if len(found) != count:
            texts = "; ".join(str(f.get("text", "")) for f in found)
            failures.append(Failure(f"findings {kind}", f"{count} finding(s)",
                                    f"{len(found)} finding(s)" + (f": {texts}" if texts else "")))
    return failures


def _due(key: str, value: Any) -> Any:
    """A follow-up's ``due`` as plain words is a moment in the caller's zone."""
    if key == "due" and isinstance(value, str) and value not in ("present", "absent"):
        return {"datetime": value, "zone": "caller"}
    return value


def check_heard(heard: Heard, text: str) -> list[Failure]:
    failures: list[Failure] = []
    said = normalise(text)
    shown = repr(text) if text else "nothing"
    for part in heard.contains:
        if normalise(part) not in said:
            failures.append(Failure("heard", f"contains {part!r}", shown))
    for part in heard.not_contains:
        if normalise(part) and normalise(part) in said:
            failures.append(Failure("heard", f"does not contain {part!r}", shown))
    if heard.equals is not None and normalise(heard.equals) != said:
        failures.append(Failure("heard", f"equals {heard.equals!r}", shown))
    if heard.pattern is not None and re.search(heard.pattern, text, re.IGNORECASE) is None:
        failures.append(Failure("heard", f"matches /{heard.pattern}/", shown))
    return failures


def admitted_claims(units: list[dict[str, Any]]) -> set[str]:
    return {str(key) for unit in units if unit.get("disposition") == "admitted"
            for key in unit.get("claim_keys") or []}


def check_claims(claims: list[str], no_claims: list[str],
                 units: list[dict[str, Any]]) -> list[Failure]:
    cited = admitted_claims(units)
    shown = ", ".join(sorted(cited)) or "no claim"
    failures = [Failure(f"claims {key}", f"an admitted unit citing {key}", f"cited: {shown}")
                for key in claims if key not in cited]
    failures += [Failure(f"no_claims {key}", f"no admitted unit citing {key}", f"cited: {shown}")
                 for key in no_claims if key in cited]
    return failures


def tool_named(record: dict[str, Any], name: str, ctx: Context) -> bool:
    """The server's tool name or the profile's model-facing name (docs/eval.md)."""
    pair = (str(record.get("server", "")), str(record.get("tool", "")))
    return record.get("tool") == name or pair in ctx.aliases.get(name, set())


def check_tools(expected: list[ToolExpect], forbidden: list[str],
                records: list[dict[str, Any]], ctx: Context) -> list[Failure]:
    failures: list[Failure] = []
    for tool in expected:
        calls = [r for r in records if tool_named(r, tool.tool, ctx)]
        matching = [r for r in calls if _call_matches(tool, r, ctx)]
        if isinstance(tool.times, int):
            ok, wanted = len(matching) == tool.times, _count(tool.times)
        else:
            ok, wanted = len(matching) >= tool.times.at_least, (
                f"at least {_count(tool.times.at_least)}")
        if ok:
            continue
        detail = ""
        if tool.arguments:
            detail += " with " + describe(tool.arguments)
        if tool.status is not None:
            detail += f" status {describe(tool.status)}"
        failures.append(Failure(f"tools {tool.tool}", wanted + detail, _calls(calls)))
    for name in forbidden:
        calls = [r for r in records if tool_named(r, name, ctx)]
        if calls:
            failures.append(Failure(f"no_tools {name}", "no call", _calls(calls)))
    return failures


def _call_matches(tool: ToolExpect, record: dict[str, Any], ctx: Context) -> bool:
    arguments = record.get("arguments") or {}
    if not all(matches(value, arguments.get(key), caller_zone=ctx.zone, now=ctx.now)
               for key, value in tool.arguments.items()):
        return False
    return tool.status is None or matches(tool.status, record.get("status"))


def _count(n: int) -> str:
    return "1 call" if n == 1 else f"{n} calls"


def _calls(calls: list[dict[str, Any]]) -> str:
    if not calls:
        return "no call"
    shown = "; ".join(
        "{" + ", ".join(f"{k}: {v}" for k, v in (c.get("arguments") or {}).items()) + "}"
        + (f" ({c.get('status')})" if c.get("status") != "ok" else "")
        for c in calls)
    return f"{_count(len(calls))} with {shown}"


def check_confirmation(expected: bool | dict[str, Any], asked: list[dict[str, Any]],
                       ctx: Context) -> list[Failure]:
    shown = "; ".join(f"{a.get('tool')} revision {a.get('revision')}: {a.get('summary')!r}"
                      for a in asked) or "no confirmation asked"
    if expected is False and asked:
        return [Failure("confirmation", "no tool.confirmation_required.v1", shown)]
    if expected is True and not asked:
        return [Failure("confirmation", "a tool.confirmation_required.v1", shown)]
    if isinstance(expected, dict) and not any(
            matches(expected, a, caller_zone=ctx.zone, now=ctx.now) for a in asked):
        return [Failure("confirmation", f"a confirmation with {describe(expected)}", shown)]
    return []


def check_stopped(expected: bool, turn: TurnResult) -> list[Failure]:
    if not expected:
        if turn.stops:
            return [Failure("stopped", "no output.stop_and_flush.v1",
                            f"stopped ({turn.stops[0].get('reason')})")]
        return []
    if turn.barged_at is None and turn.stops == []:
        agent_ms = len(turn.agent_audio) / 2 / (turn.agent_rate or 24_000) * 1000
        return [Failure("stopped", "the answer stopped by the barge-in",
                        f"the answer ended before the barge-in ({agent_ms:.0f} ms of audio)")]
    if not turn.stops:
        return [Failure("stopped", "output.stop_and_flush.v1 after the barge-in", "none came")]
    if turn.after_stop:
        return [Failure("stopped", "nothing of the generation after output.stop_and_flush.v1",
                        f"{len(turn.after_stop)} delta(s) after it")]
    late = admitted_after_stop(turn)
    if late:
        return [Failure("stopped", "no unit of the stopped generation admitted after the stop",
                        "; ".join(f"{u.get('text', '')!r} admitted {u.get('admitted_at')}"
                                  for u in late))]
    return []


def admitted_after_stop(turn: TurnResult) -> list[dict[str, Any]]:
    """Units (``GET /v1/units``) of a stopped generation admitted after its stop reached the
    caller: the record, not only the wire, says nothing of it was let out afterwards."""
    late = []
    for unit in turn.units:
        stopped = turn.stopped_at.get(str(unit.get("generation_id", "")))
        admitted = unit.get("admitted_at")
        if stopped is None or unit.get("disposition") != "admitted" or not admitted:
            continue
        instant = datetime.fromisoformat(str(admitted))
        if (instant if instant.tzinfo else instant.replace(tzinfo=UTC)).timestamp() > stopped:
            late.append(unit)
    return late


def check_rows(what: str, expected: list[dict[str, Any]], rows: list[dict[str, Any]],
               ctx: Context) -> list[Failure]:
    """Each expected entry matches a distinct row: an assignment of rows to entries (a maximum
    bipartite matching), so the order of the entries does not matter; an entry no assignment
    can serve fails. An operation's ``tool`` is the profile's name or the server's
    (``resolves_to``), as for ``tools``."""
    fits = [[i for i, row in enumerate(rows) if _row_matches(what, entry, row, ctx)]
             for entry in expected]
    taken: dict[int, int] = {}  # row -> entry

    def assign(entry: int, seen: set[int]) -> bool:
        for i in fits[entry]:
            if i in seen:
                continue
            seen.add(i)
            if i not in taken or assign(taken[i], seen):
                taken[i] = entry
                return True
        return False

    served = {n for n in range(len(expected)) if assign(n, set())}
    failures: list[Failure] = []
    for n, entry in enumerate(expected):
        if n in served:
            continue
        shown = "; ".join("{" + ", ".join(f"{k}: {row.get(k)}" for k in entry) + "}"
                          for row in rows) or f"no {what}"
        failures.append(Failure(what, describe(entry), shown))
    return failures


def _row_matches(what: str, entry: dict[str, Any], row: dict[str, Any], ctx: Context) -> bool:
    for key, value in entry.items():
        if what == "operations" and key == "tool":
            name = str(row.get("tool", ""))
            names = [name, str(row.get("resolved_tool") or "")]
            names += sorted(tool for _, tool in ctx.aliases.get(name, set()))
            if not any(matches(value, n) for n in [n for n in names if n] or [""]):
                return False
        elif not matches(value, row.get(key), caller_zone=ctx.zone, now=ctx.now):
            return False
    return True
