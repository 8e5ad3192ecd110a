"""``vocero bench dialogue``: how well the CPU dialogue manager tells what a caller asks for.

Every ``*.yaml`` of ``fixtures/dialogue`` is a held-out set for one profile (its README: written
before the model was evaluated, never tuned on). Its ``profile:`` is a profile id of
``fixtures/profiles`` or, when it holds a ``/``, a folder relative to the repository root that
holds that one profile (``fixtures/profiles-heldout/maple``). Its ``split:`` is ``tuning`` (the
default) or ``heldout``: a profile nobody tunes on, whose figure is reported apart. For each
file, the profile is loaded with the project's loader, the intent model
(:mod:`vocero.inference.dialogue.intents`) is fitted on the tools the model would see and the
profile's claims, and every line is classified with the out-of-scope decision applied
(:meth:`IntentModel.decide`). Printed per file: accuracy, fit time, classification p95, recall
and precision by intent, the confusion (true intent -> predicted -> count) and the lines it got
wrong; then, by profile, its accuracy and its weakest intents; by
split, the accuracy over its profiles' lines; and the accuracy over every line of every file.

The tools are those the model sees in a session (``SessionManager._tools``): the profile's MCP
servers are started and their definitions taken through the gateway (the server's description
where the profile gives none, the pinned input schema), prohibited tools and the follow-up
queue's call tool are left out, and built-ins carry what they resolve to and Vocero's own
schema. The prohibited tools are fitted as the agent fits them: as classes the model refuses
(:func:`vocero.contracts.prohibited.prohibited_tools`, sent with every ``LlmRequest``).
Starting the servers costs a couple of seconds, but a profile may describe its tools
only on the server (fixtures/profiles/harbor.yaml does): without them the model would be scored
on tool names alone. A tool whose server gives no definition, and every tool with ``servers``
off (the tests), is built from its ToolSpec: its profile description and ``input_schema={}``.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec
import yaml

from vocero.bench.stats import percentiles
from vocero.contracts.builtins import FOLLOWUPS_TOOL, KNOWLEDGE_TOOL, VOCERO_SERVER
from vocero.contracts.domain import AgentProfile, ToolDefinition
from vocero.contracts.ports import ClaimTopic
from vocero.contracts.prohibited import prohibited_tools
from vocero.followups.tool import SCHEMA as FOLLOWUPS_SCHEMA
from vocero.identity.profiles import load_profiles
from vocero.inference.dialogue.intents import IntentModel
from vocero.mcp_gateway.connection import McpConnections
from vocero.mcp_gateway.gateway import McpGateway
from vocero.speech.knowledge import SCHEMA as KNOWLEDGE_SCHEMA

ROOT = Path(__file__).resolve().parents[2]
HELD_OUT = ROOT / "fixtures" / "dialogue"
PROFILES = ROOT / "fixtures" / "profiles"
SPLITS = ("tuning", "heldout")
WEAKEST = 3  # intents named per profile: the lowest recall first
BUILTIN_SCHEMAS: dict[str, dict[str, Any]] = {
    KNOWLEDGE_TOOL: KNOWLEDGE_SCHEMA,
    FOLLOWUPS_TOOL: FOLLOWUPS_SCHEMA,
}


class Line(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    say: str
    intent: str


class HeldOut(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    profile: str
    lines: list[Line]
    split: Literal["tuning", "heldout"] = "tuning"


def model_tools(
    profile: AgentProfile, served: Sequence[ToolDefinition] = ()
) -> list[ToolDefinition]:
    """The profile's tools as the model would see them: ``served`` are the MCP servers' own
    definitions (by profile name); a tool without one is built from its ToolSpec alone."""
    by_name = {d.name: d for d in served}
    hidden = profile.followups.call_tool
    found: list[ToolDefinition] = []
    for spec in profile.tools:
        if spec.action_class == "prohibited" or (hidden and spec.name == hidden):
            continue
        builtin = spec.resolves_to if spec.server == VOCERO_SERVER else ""
        if spec.server == VOCERO_SERVER and builtin not in BUILTIN_SCHEMAS:
            continue  # a built-in this Vocero does not have is not offered in a session either
        if spec.name in by_name and not builtin:
            found.append(by_name[spec.name])
            continue
        found.append(
            ToolDefinition(
                name=spec.name,
                description=spec.description,
                input_schema=BUILTIN_SCHEMAS.get(builtin, {}),
                builtin=builtin,
                examples=list(spec.examples),
            )
        )
    return found


class _NoAudit:
    async def record(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None:
        return None


async def served_tools(profile: AgentProfile) -> list[ToolDefinition]:
    """The profile's MCP tools as its servers define them (started, listed, stopped)."""
    if not profile.mcp_servers:
        return []
    connections = McpConnections.from_profiles([profile], audit=_NoAudit())
    async with connections.running():
        return list(McpGateway(connections, profile).definitions())


def claim_topics(profile: AgentProfile) -> list[ClaimTopic]:
    return [ClaimTopic(key=c.key, text=c.text, topics=list(c.topics)) for c in profile.claims]


def _read(file: Path) -> HeldOut:
    data = yaml.safe_load(file.read_text(encoding="utf-8"))
    return msgspec.convert(data, HeldOut)


def load_held_out(
    file: Path, profiles_dir: Path = PROFILES, root: Path = ROOT
) -> tuple[HeldOut, AgentProfile]:
    held = _read(file)
    return held, find_profile(file, held.profile, profiles_dir, root)


def find_profile(file: Path, name: str, profiles_dir: Path, root: Path) -> AgentProfile:
    """``name`` without a ``/`` is a profile id of ``profiles_dir``; with one it is a folder,
    relative to ``root`` (or absolute), whose ``*.yaml`` define exactly one profile id."""
    if "/" not in name:
        profile = load_profiles(profiles_dir).get(name)
        if profile is None:
            raise LookupError(f"{file.name}: no profile {name!r} in {profiles_dir}")
        return profile
    catalog = load_profiles(root / name)
    ids = sorted({p.id for p in catalog})
    if len(ids) != 1:
        raise LookupError(f"{file.name}: {name} must hold one profile, it holds {ids}")
    found = catalog.get(ids[0])
    assert found is not None  # the id was just read from the catalog
    return found


def score_file(
    file: Path, held: HeldOut, profile: AgentProfile, served: Sequence[ToolDefinition] = ()
) -> dict[str, Any]:
    """One held-out file scored against its profile (see the module's docstring)."""
    tools, claims = model_tools(profile, served), claim_topics(profile)
    refused = prohibited_tools(profile)
    started = time.perf_counter()
    model = IntentModel.fit(tools, claims, refused)
    fit_ms = (time.perf_counter() - started) * 1000.0
    unknown = sorted({line.intent for line in held.lines} - set(model.intents))
    if unknown:
        raise ValueError(f"{file.name}: intents the profile does not have: {', '.join(unknown)}")
    model.decide("hello")  # the first call pays for lazy set-up; it is not a turn's cost
    confusion: dict[str, Counter[str]] = defaultdict(Counter)
    samples: list[float] = []
    errors: list[dict[str, Any]] = []
    for line in held.lines:
        started = time.perf_counter()
        decision = model.decide(line.say)
        samples.append((time.perf_counter() - started) * 1000.0)
        confusion[line.intent][decision.intent] += 1
        if decision.intent != line.intent:
            errors.append({
                "say": line.say, "intent": line.intent, "predicted": decision.intent,
                "score": round(decision.score, 3), "below_floor": decision.below_floor,
            })  # fmt: skip
    correct = len(held.lines) - len(errors)
    return {
        "file": file.name,
        "profile": profile.id,
        "profile_source": held.profile,
        "split": held.split,
        "lines": len(held.lines),
        "correct": correct,
        "accuracy": round(correct / max(1, len(held.lines)), 4),
        "fit_ms": round(fit_ms, 1),
        "classify_p95_ms": percentiles(samples).get("p95", 0.0),
        "intents": list(model.intents),
        "by_intent": _by_intent(confusion),
        "confusion": {t: dict(sorted(p.items())) for t, p in sorted(confusion.items())},
        "errors": errors,
    }


def _by_intent(confusion: dict[str, Counter[str]]) -> dict[str, dict[str, Any]]:
    predicted: Counter[str] = Counter()
    for row in confusion.values():
        predicted.update(row)
    out: dict[str, dict[str, Any]] = {}
    for intent in sorted(set(confusion) | set(predicted)):
        n = sum(confusion[intent].values()) if intent in confusion else 0
        hit = confusion[intent][intent] if intent in confusion else 0
        out[intent] = {
            "n": n,
            "correct": hit,
            "recall": round(hit / n, 4) if n else None,
            "precision": round(hit / predicted[intent], 4) if predicted[intent] else None,
        }
    return out


def weakest(by_intent: dict[str, dict[str, Any]], count: int = WEAKEST) -> list[dict[str, Any]]:
    """The intents with the lowest recall below 1 (the most lines first on a tie)."""
    missed = [(i, s) for i, s in by_intent.items() if s["n"] and s["recall"] < 1]
    missed.sort(key=lambda item: (item[1]["recall"], -item[1]["n"], item[0]))
    return [{"intent": i, "n": s["n"], "recall": s["recall"]} for i, s in missed[:count]]


def by_profile(files: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """One entry per profile; a profile scored by two files is refused (one set per profile)."""
    out: dict[str, dict[str, Any]] = {}
    for f in files:
        if f["profile"] in out:
            raise ValueError(f"{f['file']}: profile {f['profile']!r} already has a line set")
        out[f["profile"]] = {
            "file": f["file"], "split": f["split"], "lines": f["lines"], "correct": f["correct"],
            "accuracy": f["accuracy"], "weakest": weakest(f["by_intent"]),
        }  # fmt: skip
    return out


def by_split(files: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The accuracy of each split over its profiles' lines: held-out apart from tuning."""
    out: dict[str, dict[str, Any]] = {}
    for split in SPLITS:
        mine = [f for f in files if f["split"] == split]
        out[split] = {"profiles": sorted(f["profile"] for f in mine), **_total(mine)}
    return out


def _total(files: Sequence[dict[str, Any]]) -> dict[str, Any]:
    lines = sum(f["lines"] for f in files)
    correct = sum(f["correct"] for f in files)
    return {
        "lines": lines,
        "correct": correct,
        "accuracy": round(correct / lines, 4) if lines else None,
    }


def held_out_files(held_out: Path) -> list[Path]:
    return sorted(held_out.glob("*.yaml"))


async def score_all(
    held_out: Path = HELD_OUT,
    profiles_dir: Path = PROFILES,
    *,
    servers: bool = True,
    root: Path = ROOT,
) -> dict[str, Any]:
    """Every ``*.yaml`` of ``held_out``: by file, by profile, by split and over all lines."""
    files = []
    for file in held_out_files(held_out):
        held, profile = load_held_out(file, profiles_dir, root)
        served = await served_tools(profile) if servers else []
        files.append(score_file(file, held, profile, served))
    total = _total(files)
    return {
        "bench": "dialogue",
        "held_out": str(held_out),
        "mcp_servers_started": servers,
        "files": files,
        "profiles": by_profile(files),
        "splits": by_split(files),
        "lines": total["lines"],
        "accuracy": total["accuracy"],
    }


async def dialogue(args: argparse.Namespace) -> dict[str, Any]:
    return await score_all()
