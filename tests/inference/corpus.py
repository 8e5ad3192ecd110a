"""The demo profile's tool definitions and the labelled corpus of fixtures/llm_corpus.yaml."""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import yaml

from tests.inference.speech import normalise
from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import IntentClassified, LlmOutput, TextChunk, ToolIntent

CORPUS_PATH = Path(__file__).resolve().parents[2] / "fixtures" / "llm_corpus.yaml"
FREE_TEXT = {"when", "reason"}


def tool(name: str, properties: dict[str, Any], required: list[str]) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description=f"The {name} tool.",
        input_schema={"type": "object", "properties": properties, "required": required},
    )


def demo_tools() -> list[ToolDefinition]:
    return [msgspec.convert(t, ToolDefinition) for t in load()["tools"]]


@dataclass(frozen=True)
class Case:
    text: str
    tool: str | None
    arguments: dict[str, Any]
    held_out: bool = False


@functools.cache
def load() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(CORPUS_PATH.read_text())
    return data


def reference_date() -> dt.date:
    return dt.date.fromisoformat(load()["reference_date"])


def request_cases() -> list[Case]:
    return [
        Case(
            r["text"],
            None if r.get("reply") else r["tool"],
            r.get("arguments", {}),
            bool(r.get("held_out")),
        )
        for r in load()["requests"]
    ]


def confirmation_cases() -> list[tuple[str, str]]:
    return [(c["text"], c["intent"]) for c in load()["confirmations"]]


def _words(text: str) -> set[str]:
    return set(normalise(text))


def free_text_matches(expected: str, actual: Any) -> bool:
    if not isinstance(actual, str):
        return False
    e, a = _words(expected), _words(actual)
    if not e or not a:
        return e == a
    return len(e & a) / len(e | a) >= 0.5 or e <= a or a <= e


def case_correct(case: Case, outputs: list[LlmOutput]) -> bool:
    intents = [o for o in outputs if isinstance(o, ToolIntent)]
    if case.tool is None:
        return not intents and any(isinstance(o, TextChunk) for o in outputs)
    if len(intents) != 1 or intents[0].name != case.tool:
        return False
    actual = intents[0].arguments
    for key, expected in case.arguments.items():
        if key in FREE_TEXT:
            if not free_text_matches(expected, actual.get(key)):
                return False
        elif str(actual.get(key)) != str(expected):
            return False
    return True


def intent_of(outputs: list[LlmOutput]) -> str | None:
    found = [o.intent for o in outputs if isinstance(o, IntentClassified)]
    return found[0] if len(found) == 1 else None
