"""The simulator script format of SPEC §6, validated at load."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import msgspec
import yaml

from vocero.contracts.errors import ConfigError


class TtsScript(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    ms_per_char: float = 50.0
    sample_rate: int = 16000
    chunk_ms: int = 100


class Rule(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    match: str
    reply: str = ""
    tool: str = ""
    arguments: dict[str, Any] = {}
    intent: Literal["confirm", "reject", "uncertain", ""] = ""

    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.match, re.IGNORECASE)


class SimScript(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    stt: list[str] = []
    tts: TtsScript = TtsScript()
    llm: list[Rule] = []


DEFAULT_SCRIPT = SimScript(
    llm=[
        Rule(match=r"^(yes|yeah|yep|sure|go ahead|confirm)\b", intent="confirm"),
        Rule(match=r"^(no|nope|cancel|don't)\b", intent="reject"),
        Rule(match=r"what did you say", reply="I said: {last_assistant}"),
        Rule(match=r".*", reply="I can help with orders and appointments."),
    ]
)


def load_script(path: str | Path | None) -> SimScript:
    """Load and validate a script file; ``None`` gives the built-in default."""
    if path is None:
        return DEFAULT_SCRIPT
    text = Path(path).read_text(encoding="utf-8")
    try:
        raw = yaml.safe_load(text) or {}
        script = msgspec.convert(raw, SimScript)
    except yaml.YAMLError as exc:
        raise ConfigError(str(path), "$", f"not valid YAML: {exc}") from None
    except msgspec.ValidationError as exc:
        message = str(exc)
        field = message.rsplit("at `", 1)[-1].rstrip("`") if "at `" in message else "$"
        raise ConfigError(str(path), field, message) from None
    for index, rule in enumerate(script.llm):
        try:
            rule.pattern()
        except re.error as exc:
            raise ConfigError(str(path), f"$.llm[{index}].match", str(exc)) from None
    return script
