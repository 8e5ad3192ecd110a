"""``vocero review SESSION_ID --out DIR [--db URL]`` (docs/grounding.md "Audio of admitted units and
`vocero review`"): a listening-review bundle a reviewer can use without the database.

The directory holds:

* ``bundle.json``: the session's question revisions, every unit with its evidence versions
  (source versions and the claim version active when it was planned) and its disposition, each
  answer with what the caller heard, the interruption points (where in which unit, and whether
  the answer had already become self-contained), the synthesis settings, and diagnostics
  computed from the stored unit timestamps: the output queue age of admitted units (planned to
  admitted) and the correction-to-useful-answer interval (a caller turn that corrected or cut
  off the previous answer, to the first admitted factual unit of the answer to it).
* ``units/NNN_<unit_id>.wav``: one WAV per admitted unit, as synthesized (PCM16 mono), when its
  audio was kept (the recorder keeps a bounded take of every admitted unit).
* ``rubric.csv``: one row per answer, with its question, what was said and heard, the critical
  values a listener must catch, and separate empty columns for accuracy, referent clarity,
  critical-value pronunciation and recovery after interruption (the seed's rubric: dimensions
  are scored apart, never averaged into one number). A cell that would start a spreadsheet
  formula (what a caller typed can) is written with a leading ``'``: text, never a formula.
"""

from __future__ import annotations

import argparse
import csv
import json
import wave
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
from sqlalchemy import select

from vocero.app.commands.output import CommandError, run_json_command
from vocero.observability.percentiles import percentile
from vocero.speech.values import critical_values
from vocero.store.engine import Store
from vocero.store.knowledge import KnowledgeRepository, Scope
from vocero.store.migrate import upgrade_async
from vocero.store.models import GenerationRow, TurnRow
from vocero.store.records import GenerationRecord, SessionRecord, TurnRecord
from vocero.store.repositories import Conversations
from vocero.store.units import UnitAudio, UnitRepository, UnitView

FACTUAL = frozenset({"claim", "tool_fact", "readback", "outcome", "promise"})
RUBRIC_DIMENSIONS = (
    "accuracy", "referent_clarity", "critical_value_pronunciation", "recovery_after_interruption",
)  # fmt: skip
RUBRIC_COLUMNS = (
    "session_id", "generation_id", "turn_id", "question_revision", "question", "answer_text",
    "heard_text", "status", "claim_keys", "critical_values", "unit_wavs", "interrupted",
    "interrupted_before_self_contained", *RUBRIC_DIMENSIONS, "reviewer_notes",
)  # fmt: skip


FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
"""First characters a spreadsheet reads as the start of a formula (OWASP "CSV Injection": ``=``,
``+``, ``-``, ``@``, tab, carriage return; and their full-width forms, which some spreadsheets
fold into the ASCII ones)."""


class ReviewError(LookupError):
    pass


@dataclass
class ReviewData:
    """Everything the bundle is made of, read from the store once."""

    session: SessionRecord
    turns: list[TurnRecord]
    generations: list[GenerationRecord]
    units: list[UnitView]
    audio: dict[str, UnitAudio] = field(default_factory=dict)
    claim_versions: dict[str, dict[str, int]] = field(default_factory=dict)
    """unit_id -> {claim key: version active when the unit was planned}."""


# ------------------------------------------------------------------------------ reading


async def read_review(store: Store, session_id: str) -> ReviewData:
    session = await Conversations(store).get_session(session_id)
    if session is None:
        raise ReviewError(f"no session {session_id!r}")
    units_repo = UnitRepository(store)
    units = await units_repo.units(session_id)
    turns, generations = await _turns_and_generations(store, session_id)
    data = ReviewData(session=session, turns=turns, generations=generations, units=units)
    for unit in units:
        if unit.disposition == "admitted" and unit.has_audio:
            audio = await units_repo.audio(unit.unit_id)
            if audio is not None:
                data.audio[unit.unit_id] = audio
    knowledge = KnowledgeRepository(store)
    scope = Scope(session.tenant_id, session.profile_id, session.profile_version)
    for unit in units:
        versions: dict[str, int] = {}
        for key in unit.claim_keys:
            version = await knowledge.claim_version(scope, key, unit.planned_at)
            if version is not None:
                versions[key] = version
        data.claim_versions[unit.unit_id] = versions
    return data


async def _turns_and_generations(
    store: Store, session_id: str
) -> tuple[list[TurnRecord], list[GenerationRecord]]:
    async with store.read() as session:
        turns = (await session.scalars(
            select(TurnRow).where(TurnRow.session_id == session_id).order_by(TurnRow.seq)
        )).all()
        generations = (await session.scalars(
            select(GenerationRow).where(GenerationRow.session_id == session_id)
            .order_by(GenerationRow.created_at)
        )).all()
    return (
        [TurnRecord(id=t.id, session_id=t.session_id, seq=t.seq, source=t.source, text=t.text,
                    created_at=t.created_at) for t in turns],
        [GenerationRecord(
            id=g.id, session_id=g.session_id, turn_id=g.turn_id, status=g.status,
            generated_text=g.generated_text, heard_text=g.heard_text, played_ms=g.played_ms,
            sent_ms=g.sent_ms, created_at=g.created_at, completed_at=g.completed_at,
        ) for g in generations],
    )


# ------------------------------------------------------------------------------ building


def wav_name(unit: UnitView) -> str:
    return f"units/{unit.seq:03d}_{unit.unit_id}.wav"


def build_bundle(data: ReviewData) -> dict[str, Any]:
    session = data.session
    return {
        "session": {
            "session_id": session.id, "profile": {"id": session.profile_id,
                                                  "version": session.profile_version},
            "created_at": _iso(session.created_at), "closed_at": _iso(session.closed_at),
            "locale": session.effective.get("locale", ""),
        },
        "synthesis": synthesis_settings(data),
        "question_revisions": question_revisions(data),
        "answers": [_answer(data, g) for g in data.generations],
        "units": [_unit(data, u) for u in data.units],
        "interruption_points": interruption_points(data),
        "diagnostics": diagnostics(data),
    }


def synthesis_settings(data: ReviewData) -> dict[str, Any]:
    effective = data.session.effective
    used = [u.synthesis for u in data.units if u.synthesis]
    distinct = [dict(s) for i, s in enumerate(used) if s not in used[:i]]
    return {
        "voice_profile_id": effective.get("voice_profile_id", ""),
        "voice_version": effective.get("voice_version", ""),
        "output_sample_rate": effective.get("output_sample_rate"),
        "per_unit": distinct,
    }


def question_revisions(data: ReviewData) -> list[dict[str, Any]]:
    texts = {t.id: t for t in data.turns}
    seen: set[tuple[str, int]] = set()
    revisions: list[dict[str, Any]] = []
    for unit in data.units:
        key = (unit.turn_id, unit.question_revision)
        if key in seen:
            continue
        seen.add(key)
        turn = texts.get(unit.turn_id)
        revisions.append({
            "question_revision": unit.question_revision, "turn_id": unit.turn_id,
            "question": turn.text if turn else "", "at": _iso(turn.created_at) if turn else None,
        })
    return revisions


def _answer(data: ReviewData, generation: GenerationRecord) -> dict[str, Any]:
    units = [u for u in data.units if u.generation_id == generation.id]
    return {
        "generation_id": generation.id, "turn_id": generation.turn_id,
        "status": generation.status, "heard_text": generation.heard_text,
        "played_ms": generation.played_ms, "units": [u.unit_id for u in units],
        "self_contained_at_ms": self_contained_at(units),
    }


def _unit(data: ReviewData, unit: UnitView) -> dict[str, Any]:
    return {
        **{k: (_iso(v) if isinstance(v, datetime) else v) for k, v in unit.public().items()},
        "seq": unit.seq, "index": unit.index,
        "claim_versions": data.claim_versions.get(unit.unit_id, {}),
        "audio_offset_ms": unit.audio_offset_ms, "audio_ms": unit.audio_ms,
        "synthesis": unit.synthesis,
        "audio_file": wav_name(unit) if unit.unit_id in data.audio else None,
        "queue_age_ms": _queue_age(unit),
    }


def self_contained_at(units: list[UnitView]) -> float | None:
    """Where the answer became self-contained: the end of its first admitted factual unit
    (claims carry their conditions whole, so that unit alone is a usable answer)."""
    for unit in units:
        if unit.disposition == "admitted" and unit.kind in FACTUAL and unit.audio_ms > 0:
            return unit.audio_offset_ms + unit.audio_ms
    return None


def interruption_points(data: ReviewData) -> list[dict[str, Any]]:
    points: list[dict[str, Any]] = []
    for generation in data.generations:
        if generation.status not in ("interrupted", "canceled"):
            continue
        units = [u for u in data.units if u.generation_id == generation.id]
        played = float(generation.played_ms)
        during = next(
            (u for u in units if u.disposition == "admitted"
             and u.audio_offset_ms <= played < u.audio_offset_ms + u.audio_ms),
            None,
        )
        contained = self_contained_at(units)
        points.append({
            "generation_id": generation.id, "turn_id": generation.turn_id,
            "status": generation.status, "played_ms": generation.played_ms,
            "heard_text": generation.heard_text,
            "at": _iso(generation.completed_at),
            "unit_id": during.unit_id if during else None,
            "offset_in_unit_ms": round(played - during.audio_offset_ms) if during else None,
            "before_self_contained": None if contained is None else played < contained,
        })
    return points


def diagnostics(data: ReviewData) -> dict[str, Any]:
    ages = [a for a in (_queue_age(u) for u in data.units if u.disposition == "admitted")
            if a is not None]
    intervals = correction_intervals(data)
    measured = [i["interval_ms"] for i in intervals if i["interval_ms"] is not None]
    return {
        "output_queue_age_ms": _summary(ages),
        "correction_to_useful_answer_ms": {**_summary(measured), "corrections": intervals},
        "dispositions": {
            d: sum(1 for u in data.units if u.disposition == d)
            for d in sorted({u.disposition for u in data.units})
        },
    }


def correction_intervals(data: ReviewData) -> list[dict[str, Any]]:
    """For each caller turn that cut off or corrected the previous answer: from the turn to the
    first admitted factual unit answering it (``None``: it never got a useful answer)."""
    by_turn: dict[str | None, list[GenerationRecord]] = {}
    for generation in data.generations:
        by_turn.setdefault(generation.turn_id, []).append(generation)
    revisions = {u.turn_id: u.question_revision for u in data.units}
    found: list[dict[str, Any]] = []
    previous: TurnRecord | None = None
    for turn in data.turns:
        if previous is not None and _corrects(previous, turn, by_turn, revisions):
            useful = [u.admitted_at for u in data.units
                      if u.turn_id == turn.id and u.disposition == "admitted"
                      and u.kind in FACTUAL and u.admitted_at is not None]
            interval = None
            if useful:
                interval = round((min(useful) - turn.created_at).total_seconds() * 1000.0, 1)
            found.append({"turn_id": turn.id, "after_turn_id": previous.id,
                          "interval_ms": interval})
        previous = turn
    return found


def _corrects(
    previous: TurnRecord, turn: TurnRecord, by_turn: dict[str | None, list[GenerationRecord]],
    revisions: dict[str, int],
) -> bool:
    cut_off = any(g.status in ("interrupted", "canceled") for g in by_turn.get(previous.id, []))
    revised = revisions.get(turn.id, 0) > revisions.get(previous.id, 0)
    return cut_off or revised


def rubric_rows(data: ReviewData) -> list[dict[str, str]]:
    questions = {t.id: t.text for t in data.turns}
    interrupted = {p["generation_id"]: p for p in interruption_points(data)}
    rows: list[dict[str, str]] = []
    for generation in data.generations:
        units = [u for u in data.units if u.generation_id == generation.id]
        admitted = [u for u in units if u.disposition == "admitted"]
        if not units:
            continue
        answer = " ".join(u.text for u in admitted)
        point = interrupted.get(generation.id)
        before = point.get("before_self_contained") if point else None
        rows.append({
            "session_id": data.session.id, "generation_id": generation.id,
            "turn_id": generation.turn_id or "",
            "question_revision": str(units[0].question_revision),
            "question": questions.get(generation.turn_id or "", ""),
            "answer_text": answer, "heard_text": generation.heard_text,
            "status": generation.status,
            "claim_keys": " ".join(dict.fromkeys(k for u in admitted for k in u.claim_keys)),
            "critical_values": "; ".join(dict.fromkeys(v.raw for v in critical_values(answer))),
            "unit_wavs": " ".join(wav_name(u) for u in admitted if u.unit_id in data.audio),
            "interrupted": "yes" if point else "no",
            "interrupted_before_self_contained": "" if before is None else
            ("yes" if before else "no"),
            **dict.fromkeys(RUBRIC_DIMENSIONS, ""), "reviewer_notes": "",
        })
    return rows


def _queue_age(unit: UnitView) -> float | None:
    if unit.admitted_at is None:
        return None
    return round((unit.admitted_at - unit.planned_at).total_seconds() * 1000.0, 1)


def _summary(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"count": 0, "p50": None, "p95": None, "max": None}
    ordered = sorted(values)
    return {"count": len(ordered), "p50": percentile(ordered, 0.5),
            "p95": percentile(ordered, 0.95), "max": ordered[-1]}


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


# ------------------------------------------------------------------------------ writing


def write_review(data: ReviewData, out: Path) -> dict[str, Any]:
    """Write the bundle, the WAVs and the rubric into ``out``; returns the bundle."""
    out.mkdir(parents=True, exist_ok=True)
    bundle = build_bundle(data)
    (out / "bundle.json").write_text(json.dumps(bundle, indent=2, ensure_ascii=False) + "\n")
    for unit in data.units:
        audio = data.audio.get(unit.unit_id)
        if audio is not None:
            _write_wav(out / wav_name(unit), audio)
    with (out / "rubric.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=RUBRIC_COLUMNS)
        writer.writeheader()
        writer.writerows({k: spreadsheet_text(v) for k, v in row.items()}
                         for row in rubric_rows(data))
    return bundle


def spreadsheet_text(value: str) -> str:
    """``value`` as a spreadsheet shows it, never runs it: a cell that would start a formula
    (what a caller said: ``=HYPERLINK(...)``, ``@SUM(...)``, ``+1-1``) gets a leading ``'``, so
    the spreadsheet takes the cell as text (the reviewer may see the quote)."""
    return f"'{value}" if value.startswith(FORMULA_LEADS) else value


def _write_wav(path: Path, audio: UnitAudio) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as handle:
        handle.setnchannels(1)
        handle.setsampwidth(2)
        handle.setframerate(audio.sample_rate)
        handle.writeframes(audio.pcm)


async def review(url: str, session_id: str, out: Path) -> dict[str, Any]:
    await upgrade_async(url)
    store = Store.open(url)
    try:
        data = await read_review(store, session_id)
    finally:
        await store.close()
    return await anyio.to_thread.run_sync(write_review, data, out)


def review_command(args: argparse.Namespace, url: str) -> int:
    """The CLI subcommand: writes the directory and prints a one-line JSON summary."""
    out = Path(args.out)

    def body() -> tuple[int, dict[str, Any]]:
        try:
            bundle = anyio.run(review, url, args.session_id, out)
        except ReviewError as exc:
            raise CommandError(str(exc)) from None
        return 0, {
            "out": str(out), "units": len(bundle["units"]), "answers": len(bundle["answers"]),
            "wavs": sum(1 for u in bundle["units"] if u["audio_file"]),
            "output_queue_age_ms": bundle["diagnostics"]["output_queue_age_ms"],
        }

    return run_json_command(body)
