"""The simulator script format (docs/eval.md "The sim script"), validated at load.

A rule answers with words (``reply``), a tool call then words, a confirmation intent, or
approved claims: ``claims: [key, ...]``, ``paraphrase: {text, claims}`` (assisted grounding), or,
after ``tool: knowledge.search``, ``claims: auto`` (the best claims the search returned).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import msgspec
import yaml

from vocero.contracts.errors import ConfigError
from vocero.contracts.ports import ClaimAnswer


class TtsScript(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    ms_per_char: float = 50.0
    sample_rate: int = 16000
    chunk_ms: int = 100


AUTO = "auto"
"""``claims: auto``: answer with the best-ranked claims the rule's ``knowledge.search`` found."""


class Paraphrase(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The model's own wording of claims, held to the grounding checks
    (docs/grounding.md)."""

    text: str
    claims: list[str] | str = []


class Rule(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    match: str
    reply: str = ""
    tool: str = ""
    arguments: dict[str, Any] = {}
    intent: Literal["confirm", "reject", "uncertain", ""] = ""
    claims: list[str] | str = []
    """Approved claims the model picked (their wording is spoken), or ``auto``."""
    paraphrase: Paraphrase | None = None

    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.match, re.IGNORECASE)

    @property
    def answers_with_claims(self) -> bool:
        return bool(self.claims) or self.paraphrase is not None


def claim_answer(rule: Rule, text: str, result: dict[str, Any] | None) -> ClaimAnswer:
    """The :class:`ClaimAnswer` of a rule: its claims (or, for ``auto``, the best claims of the
    search result) and its paraphrase, already rendered as ``text``."""
    wanted = rule.paraphrase.claims if rule.paraphrase is not None else rule.claims
    keys = _found_claims(result) if wanted == AUTO else list(wanted)
    return ClaimAnswer(claim_keys=keys, paraphrase=text)


def _found_claims(result: dict[str, Any] | None) -> list[str]:
    if not result:
        return []
    best = result.get("best")
    if isinstance(best, list) and all(isinstance(k, str) for k in best):
        return list(best)
    claims = result.get("claims")
    first = claims[0] if isinstance(claims, list) and claims else None
    return [first["key"]] if isinstance(first, dict) and isinstance(first.get("key"), str) else []


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
        _check_claims(str(path), index, rule)
    return script


def _check_claims(path: str, index: int, rule: Rule) -> None:
    for where, claims in (("claims", rule.claims),
                          ("paraphrase.claims", rule.paraphrase.claims if rule.paraphrase else [])):
        if isinstance(claims, str) and claims != AUTO:
            raise ConfigError(path, f"$.llm[{index}].{where}", "a list of claim keys or `auto`")
        if claims == AUTO and rule.tool != "knowledge.search":
            raise ConfigError(
                path, f"$.llm[{index}].{where}", "`auto` needs `tool: knowledge.search`"
            )
    if rule.claims and rule.paraphrase is not None:
        raise ConfigError(path, f"$.llm[{index}]", "use `claims` or `paraphrase`, not both")
    if rule.answers_with_claims and (rule.reply or rule.intent):
        raise ConfigError(path, f"$.llm[{index}]", "a claim answer has no `reply` or `intent`")
