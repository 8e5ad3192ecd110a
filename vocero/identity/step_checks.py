"""Load-time checks of a profile's ``required_steps`` (docs/adr/0030-required-steps.md).

Each failure names the profile file and the exact field: a step's id empty, malformed or
repeated; a disclosure without its text; a verification whose ``tool`` is not a *read* tool of
the profile, whose questions are missing or repeated, or whose ``arguments``/``match`` name an
answer it never asks for; a scope naming no write (an unknown tool, a read, a class that is not
a write).
"""

from __future__ import annotations

import re
from pathlib import Path

from vocero.contracts.domain import AgentProfile, RequiredStep
from vocero.contracts.errors import ConfigError

STEP_ID = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")
WRITE_CLASSES = frozenset({"reversible_write", "irreversible"})


def check_steps(file: Path, profile: AgentProfile) -> None:
    """Raise ``ConfigError`` for the first problem of ``profile.required_steps``."""
    seen: dict[str, int] = {}
    for index, step in enumerate(profile.required_steps):
        where = f"required_steps[{index}]"
        if not STEP_ID.match(step.id):
            raise _error(file, f"{where}.id",
                         "must be 1-64 characters: a lowercase letter, then a-z 0-9 _ . -")
        first = seen.setdefault(step.id, index)
        if first != index:
            raise _error(file, f"{where}.id", f"duplicate of required_steps[{first}].id")
        _check_scope(file, where, step, profile)
        if step.kind == "disclosure":
            _check_disclosure(file, where, step)
        else:
            _check_verification(file, where, step, profile)


def _check_scope(file: Path, where: str, step: RequiredStep, profile: AgentProfile) -> None:
    scope = step.applies_to
    if not scope.tools and not scope.classes:
        raise _error(file, f"{where}.applies_to", "names no tool and no action class")
    for i, name in enumerate(scope.tools):
        tool = profile.tool(name)
        if tool is None:
            raise _error(file, f"{where}.applies_to.tools[{i}]", f"no profile tool {name!r}")
        if tool.action_class not in WRITE_CLASSES:
            raise _error(file, f"{where}.applies_to.tools[{i}]",
                         f"{name!r} is {tool.action_class}: steps guard writes only")
    for i, action_class in enumerate(scope.classes):
        if action_class not in WRITE_CLASSES:
            raise _error(file, f"{where}.applies_to.classes[{i}]",
                         f"{action_class!r}: steps guard writes only "
                         "(reversible_write, irreversible)")


def _check_disclosure(file: Path, where: str, step: RequiredStep) -> None:
    if not step.text.strip():
        raise _error(file, f"{where}.text", "a disclosure needs the text to be heard")
    for field in ("tool", "ask", "arguments", "match"):
        if getattr(step, field):
            raise _error(file, f"{where}.{field}", "only a verify_identity step has it")


def _check_verification(
    file: Path, where: str, step: RequiredStep, profile: AgentProfile
) -> None:
    if step.text:
        raise _error(file, f"{where}.text", "only a disclosure step has it")
    tool = profile.tool(step.tool)
    if tool is None or tool.action_class != "read":
        found = "no such tool" if tool is None else f"it is {tool.action_class}"
        raise _error(file, f"{where}.tool",
                     f"{step.tool!r} is not a read tool of this profile ({found})")
    if not step.ask:
        raise _error(file, f"{where}.ask", "a verification asks the caller for at least one fact")
    asked: set[str] = set()
    for i, fact in enumerate(step.ask):
        if not fact.field.strip() or fact.field in asked:
            raise _error(file, f"{where}.ask[{i}].field", "empty or asked twice")
        if not fact.question.strip():
            raise _error(file, f"{where}.ask[{i}].question", "must not be empty")
        asked.add(fact.field)
    if not step.match:
        raise _error(file, f"{where}.match", "names no answer to compare with the record")
    for answer, result_field in step.match.items():
        if answer not in asked or not result_field.strip():
            raise _error(file, f"{where}.match.{answer}",
                         "must map an asked field to a result field")
    for argument, answer in step.arguments.items():
        if answer not in asked:
            raise _error(file, f"{where}.arguments.{argument}",
                         f"{answer!r} is not an asked field")


def _error(file: Path, field: str, message: str) -> ConfigError:
    return ConfigError(str(file), field, message)
