"""Scenario files (docs/eval.md, "File format"): loading and validation.

A malformed file raises :class:`ScenarioError` naming the file, the scenario and the field; the
command exits 2 and nothing runs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal, TypeVar

import msgspec
import yaml

from vocero.evals.matchers import check_matcher

T = TypeVar("T")


class ScenarioError(Exception):
    """A malformed scenario file: ``file``, ``scenario`` (or ``-``), ``field`` and why."""

    def __init__(self, file: Path | str, scenario: str, field: str, reason: str) -> None:
        self.file, self.scenario, self.field, self.reason = str(file), scenario, field, reason
        super().__init__(f"{file}: scenario {scenario}: field {field}: {reason}")


class Strict(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    pass


class AtLeast(Strict, kw_only=True):
    at_least: int


class ToolExpect(Strict, kw_only=True):
    tool: str
    arguments: dict[str, Any] = {}
    times: int | AtLeast = 1
    status: Any = None


class Heard(Strict, kw_only=True):
    contains: list[str] = []
    not_contains: list[str] = []
    equals: str | None = None
    pattern: str | None = None


class TurnExpect(Strict, kw_only=True):
    heard: Heard | None = None
    claims: list[str] = []
    no_claims: list[str] = []
    tools: list[ToolExpect] = []
    no_tools: list[str] = []
    confirmation: bool | dict[str, Any] | None = None
    ttfa_ms: int | None = None
    stopped: bool | None = None
    barge_in_stop_ms: int | None = None


class ScenarioExpect(Strict, kw_only=True):
    operations: list[dict[str, Any]] = []
    followups: list[dict[str, Any]] = []
    findings: dict[str, int] = {}
    tools: list[ToolExpect] = []
    no_tools: list[str] = []
    claims: list[str] = []
    no_claims: list[str] = []


class Pause(Strict, kw_only=True):
    words: int
    ms: int


class Turn(Strict, kw_only=True):
    say: str | None = None
    pause_ms_after_words: Pause | None = None
    noise_db: float | None = None
    if_asked: str | None = None
    otherwise: Literal["skip", "fail"] = msgspec.field(default="skip", name="else")
    barge_in_after_ms: int | None = None
    then: str | None = None
    confirm: Literal["button"] | None = None
    reject: Literal["button"] | None = None
    expect: TurnExpect | None = None


class Scenario(Strict, kw_only=True):
    name: str
    description: str = ""
    tags: list[str] = []
    caller: str | None = None
    sim: str | None = None
    locale: str | None = None
    turns: list[Turn]
    expect: ScenarioExpect | None = None
    # Filled from the file's defaults after loading.
    file: str = ""
    sim_path: str = ""


class FileDefaults(Strict, kw_only=True):
    caller: str = "demo-token"
    sim: str | None = None
    locale: str | None = None
    scenarios: list[dict[str, Any]]


def find_files(paths: list[str]) -> list[Path]:
    """Every ``*.yaml`` / ``*.yml`` named or under a named folder (recursively, sorted)."""
    found: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*")
                                if p.suffix in (".yaml", ".yml") and not _sim_script(p)))
        elif path.is_file():
            found.append(path)
        else:
            raise ScenarioError(path, "-", "-", "no such file or folder")
    return found


SIM_KEYS = {"stt", "tts", "llm"}


def _sim_script(file: Path) -> bool:
    """A sim script beside the scenarios (``stt``, ``tts``, ``llm``, no ``scenarios``),
    skipped when a folder is searched."""
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return False
    return isinstance(data, dict) and "scenarios" not in data and bool(SIM_KEYS & set(data))


def load_files(paths: list[str]) -> list[Scenario]:
    """Load and check every scenario under ``paths``; names are unique in the run."""
    scenarios: list[Scenario] = []
    seen: dict[str, str] = {}
    for file in find_files(paths):
        for scenario in load_file(file):
            if scenario.name in seen:
                raise ScenarioError(file, scenario.name, "name",
                                    f"already used by a scenario of {seen[scenario.name]}")
            seen[scenario.name] = str(file)
            scenarios.append(scenario)
    return scenarios


def load_file(file: Path) -> list[Scenario]:
    try:
        raw = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ScenarioError(file, "-", "-", f"not readable YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ScenarioError(file, "-", "-", "must be a mapping with a scenarios list")
    defaults = _convert(raw, FileDefaults, file, "-")
    result: list[Scenario] = []
    for index, entry in enumerate(defaults.scenarios):
        label = str(entry.get("name", f"#{index + 1}")) if isinstance(entry, dict) else f"#{index}"
        scenario = _convert(entry, Scenario, file, label)
        sim = scenario.sim if scenario.sim is not None else defaults.sim
        sim_path = ""
        if sim:
            sim_path = str((file.parent / sim).resolve())
            if not Path(sim_path).is_file():
                raise ScenarioError(file, scenario.name, "sim", f"no such file {sim_path}")
        scenario = msgspec.structs.replace(
            scenario,
            caller=scenario.caller or defaults.caller,
            locale=scenario.locale or defaults.locale,
            file=str(file),
            sim_path=sim_path,
        )
        _check(scenario, file)
        result.append(scenario)
    return result


def _convert(value: Any, kind: type[T], file: Path, scenario: str) -> T:
    try:
        return msgspec.convert(value, kind)
    except msgspec.ValidationError as exc:
        message = str(exc)
        reason, _, where = message.partition(" - at `$")
        field = where.rstrip("`").lstrip(".") or "-"
        unknown = re.search(r"unknown field `([^`]+)`", reason)
        if unknown:
            field = f"{field}.{unknown.group(1)}" if field != "-" else unknown.group(1)
        missing = re.search(r"missing required field `([^`]+)`", reason)
        if missing:
            field = f"{field}.{missing.group(1)}" if field != "-" else missing.group(1)
        raise ScenarioError(file, scenario, field, reason) from exc


def _check(scenario: Scenario, file: Path) -> None:
    """What the types cannot say: regexes compile, matchers are known forms, turns say something."""

    def fail(field: str, reason: str) -> None:
        raise ScenarioError(file, scenario.name, field, reason)

    if not scenario.name.strip():
        fail("name", "must not be empty")
    if not scenario.turns:
        fail("turns", "at least one turn is required")
    for index, turn in enumerate(scenario.turns):
        at = f"turns[{index}]"
        if turn.say is None and turn.confirm is None and turn.reject is None:
            fail(at, "a turn needs say, confirm: button or reject: button")
        if turn.if_asked is not None:
            _regex(turn.if_asked, f"{at}.if_asked", fail)
        if (turn.barge_in_after_ms is None) != (turn.then is None):
            fail(f"{at}.then" if turn.then is None else f"{at}.barge_in_after_ms",
                 "barge_in_after_ms and then go together")
        if turn.expect is not None:
            _check_expect(turn.expect, f"{at}.expect", fail)
    if scenario.expect is not None:
        expect = scenario.expect
        for name, tools in (("tools", expect.tools),):
            for i, tool in enumerate(tools):
                _check_tool(tool, f"expect.{name}[{i}]", fail)
        for name, rows in (("operations", expect.operations), ("followups", expect.followups)):
            for i, row in enumerate(rows):
                for key, value in row.items():
                    _matcher(value, f"expect.{name}[{i}].{key}", fail)


def _check_expect(expect: TurnExpect, at: str, fail: Any) -> None:
    if expect.heard is not None and expect.heard.pattern is not None:
        _regex(expect.heard.pattern, f"{at}.heard.pattern", fail)
    for i, tool in enumerate(expect.tools):
        _check_tool(tool, f"{at}.tools[{i}]", fail)
    if isinstance(expect.confirmation, dict):
        for key, value in expect.confirmation.items():
            _matcher(value, f"{at}.confirmation.{key}", fail)


def _check_tool(tool: ToolExpect, at: str, fail: Any) -> None:
    for key, value in tool.arguments.items():
        _matcher(value, f"{at}.arguments.{key}", fail)
    if tool.status is not None:
        _matcher(tool.status, f"{at}.status", fail)


def _matcher(value: Any, at: str, fail: Any) -> None:
    problem = check_matcher(value)
    if problem:
        fail(at, problem)


def _regex(pattern: str, at: str, fail: Any) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        fail(at, f"not a regular expression: {exc}")
