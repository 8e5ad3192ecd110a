"""Retention per data class (docs/operators.md "Retention per data class") and the purge that
enforces it.

Each class has a period: a number of days after which its content is erased, ``keep`` (never
erased) or ``not_stored`` (Vocero never writes it, so there is nothing to erase). The classes,
what Vocero stores of each and where, and the defaults, are in :data:`CLASSES` (and in
docs/operators.md). Erasing keeps the rows and their ids, times, statuses and hashes: the
content goes (text emptied, JSON replaced by :data:`PURGED`, unit audio deleted, voice
references emptied, audit payloads tombstoned, see :mod:`vocero.store.tombstones`). What a purge
erased is recorded in the audit log, one ``retention.purged`` event per class and run, with the
counts per table and the sessions concerned.

The purge is bounded: it erases at most :data:`BATCH` rows of one table per transaction, and
runs until nothing older than the cutoffs is left.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import msgspec
import structlog
import yaml
from sqlalchemy import String, cast, delete, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from vocero.contracts.errors import ConfigError
from vocero.store.audit_tx import append_in
from vocero.store.engine import Store
from vocero.store.hashchain import format_at
from vocero.store.models import (
    AuditEventRow,
    FindingRow,
    FollowupRow,
    GenerationRow,
    OperationRow,
    ProposalRevisionRow,
    SpokenUnitRow,
    TurnRow,
    UnitAudioRow,
    VoiceProfileRow,
    VoiceVersionRow,
)
from vocero.store.tombstones import (
    KEPT_KINDS,
    PURGED_KIND,
    TOMBSTONE_KEY,
    TOMBSTONED_KIND,
    claim,
    tombstone,
)

log = structlog.get_logger("vocero.retention")

DataClass = Literal[
    "raw_audio", "voice_references", "transcripts", "prompts_context", "model_responses",
    "tool_io", "telemetry", "audit",
]
Period = int | Literal["keep", "not_stored"]
PURGED: dict[str, Any] = {"$purged": True}
"""What an erased JSON value (tool arguments, receipts) becomes."""
BATCH = 500
MAX_SESSION_IDS = 200
"""Sessions named in one ``retention.purged`` event (the count says how many in all)."""
FINISHED_OPERATIONS = ("committed", "rejected")
"""Operations whose content may go: an ``unknown`` one still waits for reconciliation."""
FINISHED_FOLLOWUPS = ("placed", "refused", "missed")


@dataclass(frozen=True, slots=True)
class ClassInfo:
    default: Period
    stored: str
    """What Vocero stores of this class today, and where."""
    storable: bool = True
    """False: Vocero has nowhere it writes this class; only ``not_stored`` is accepted."""


CLASSES: dict[str, ClassInfo] = {
    "raw_audio": ClassInfo(
        "not_stored", "The caller's audio is held in memory only, for the utterance being "
        "recognised (at most 30 s) and the pre-roll; it is never written.", storable=False),
    "voice_references": ClassInfo(
        30, "voice_versions.ref_audio and ref_text, sealed with the vault key; erased the "
        "given number of days after the voice was revoked or its usage period ended."),
    "transcripts": ClassInfo(
        90, "turns.text (what the caller said or typed, as recognised) and findings.text (a "
        "promise quoted from what was heard)."),
    "prompts_context": ClassInfo(
        "not_stored", "The model's context is rebuilt in memory from the profile and the "
        "session's turns and generations for every request; prompts are never written.",
        storable=False),
    "model_responses": ClassInfo(
        90, "generations.generated_text and heard_text, spoken_units.text and synthesis, and "
        "unit_audio.pcm (the synthesized audio of admitted units, for the listening review)."),
    "tool_io": ClassInfo(
        365, "operations.arguments and receipt, proposal_revisions.canonical_arguments and "
        "summary (the read-back), followups.reason and when_text of finished follow-ups."),
    "telemetry": ClassInfo(
        "not_stored", "Metrics live in the process (GET /metrics); logs go to standard error "
        "and traces to the OTLP collector: their retention is the collector's.", storable=False),
    "audit": ClassInfo(
        2555, "audit_events.data: tombstoned after the period, the chain (seq, kind, actor, "
        "time, hashes) kept for ever and still verifiable."),
}
"""The data classes of docs/operators.md "Retention per data class", each with its default period
(days)."""


class RetentionPolicy(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    raw_audio: Period = "not_stored"
    voice_references: Period = 30
    transcripts: Period = 90
    prompts_context: Period = "not_stored"
    model_responses: Period = 90
    tool_io: Period = 365
    telemetry: Period = "not_stored"
    audit: Period = 2555

    def period(self, data_class: str) -> Period:
        value: Period = getattr(self, data_class)
        return value

    def public(self) -> dict[str, Period]:
        return {name: self.period(name) for name in CLASSES}


def load_policy(path: str | Path | None) -> RetentionPolicy:
    """The policy of a YAML file (``{class: days | keep | not_stored}``), the defaults for
    the classes it does not name; no file: the defaults. Raises :class:`ConfigError`."""
    if not path:
        return RetentionPolicy()
    file = Path(path)
    try:
        raw = yaml.safe_load(file.read_text()) or {}
        policy = msgspec.convert(raw, RetentionPolicy)
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(str(file), "", str(exc)) from None
    except msgspec.ValidationError as exc:
        raise ConfigError(str(file), _field(str(exc)), str(exc)) from None
    for name, info in CLASSES.items():
        value = policy.period(name)
        if not info.storable and value != "not_stored":
            raise ConfigError(str(file), name, "Vocero never stores this class: only "
                              "not_stored applies")
        if isinstance(value, int) and value < 0:
            raise ConfigError(str(file), name, "days must be 0 or more")
    return policy


def _field(message: str) -> str:
    marker = "`$."
    if marker in message:
        return message.split(marker, 1)[1].split("`", 1)[0]
    return message.split("`")[1] if message.count("`") >= 2 else ""


# ---------------------------------------------------------------------------------- the purge


@dataclass(slots=True)
class ClassReport:
    days: int
    before: str
    now: datetime
    rows: dict[str, int] = field(default_factory=dict)
    sessions: set[str] = field(default_factory=set)

    def add(self, table: str, count: int, sessions: set[str] | None = None) -> None:
        if count:
            self.rows[f"{table}_count"] = self.rows.get(f"{table}_count", 0) + count
        self.sessions.update(s for s in sessions or () if s)

    def audit_data(self, data_class: str) -> dict[str, Any]:
        ids = sorted(self.sessions)
        return {
            "data_class": data_class,
            "days": self.days,
            "before": self.before,
            **self.rows,
            "session_ids": ids[:MAX_SESSION_IDS],
            "sessions_count": len(ids),
        }


@dataclass(slots=True)
class PurgeReport:
    at: str
    classes: dict[str, ClassReport] = field(default_factory=dict)

    def public(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "classes": {
                name: {"days": r.days, "before": r.before, **r.rows,
                       "sessions_count": len(r.sessions)}
                for name, r in self.classes.items()
            },
        }

    @property
    def erased(self) -> int:
        return sum(sum(r.rows.values()) for r in self.classes.values())


Purger = Callable[[AsyncSession, datetime, ClassReport], Any]


async def purge(store: Store, policy: RetentionPolicy, now: datetime) -> PurgeReport:
    """Erase what ``policy`` no longer allows at ``now``; audit what was erased."""
    report = PurgeReport(at=format_at(now))
    for name, purger in _PURGERS.items():
        days = policy.period(name)
        if not isinstance(days, int):
            continue
        cutoff = now - timedelta(days=days)
        found = ClassReport(days=days, before=format_at(cutoff), now=now)
        while await _batch(store, purger, cutoff, found):
            pass
        if found.rows:
            report.classes[name] = found
            async with store.write() as session:
                await append_in(session, PURGED_KIND, found.audit_data(name), at=now,
                                actor="vocero.retention")
            log.info("retention.purged", data_class=name, **found.rows)
    return report


async def _batch(store: Store, purger: Purger, cutoff: datetime, report: ClassReport) -> bool:
    """One transaction of one class; True while there may be more to erase."""
    before = sum(report.rows.values())
    async with store.write() as session:
        await purger(session, cutoff, report)
    return sum(report.rows.values()) > before


async def _ids(session: AsyncSession, pk: InstrumentedAttribute[Any],
               owner: InstrumentedAttribute[Any], *where: Any) -> tuple[list[Any], set[str]]:
    rows = (await session.execute(select(pk, owner).where(*where).order_by(pk).limit(BATCH))).all()
    return [row[0] for row in rows], {row[1] for row in rows if row[1]}


async def _erase(session: AsyncSession, report: ClassReport, table: str,
                 pk: InstrumentedAttribute[Any], owner: InstrumentedAttribute[Any],
                 where: list[Any], values: Mapping[str, Any]) -> bool:
    """Erase one batch of ``table`` (``values`` set on the rows ``where`` selects)."""
    ids, sessions = await _ids(session, pk, owner, *where)
    if ids:
        await session.execute(update(pk.class_).where(pk.in_(ids)).values(**values))
        report.add(table, len(ids), sessions)
    return len(ids) == BATCH


def _not_purged(column: InstrumentedAttribute[Any]) -> Any:
    """The JSON value is not the :data:`PURGED` marker (compared as the text SQLAlchemy wrote,
    which both SQLite and PostgreSQL's ``json`` keep as written)."""
    return cast(column, String) != json.dumps(PURGED)


async def _transcripts(session: AsyncSession, cutoff: datetime, report: ClassReport) -> None:
    await _erase(session, report, "turns", TurnRow.id, TurnRow.session_id,
                 [TurnRow.created_at < cutoff, TurnRow.text != ""], {"text": ""})
    await _erase(session, report, "findings", FindingRow.id, FindingRow.session_id,
                 [FindingRow.at < cutoff, FindingRow.text != ""], {"text": ""})


async def _model_responses(session: AsyncSession, cutoff: datetime,
                           report: ClassReport) -> None:
    await _erase(session, report, "generations", GenerationRow.id, GenerationRow.session_id,
                 [GenerationRow.created_at < cutoff,
                  or_(GenerationRow.generated_text != "", GenerationRow.heard_text != "")],
                 {"generated_text": "", "heard_text": ""})
    await _erase(session, report, "spoken_units", SpokenUnitRow.unit_id,
                 SpokenUnitRow.session_id,
                 [SpokenUnitRow.planned_at < cutoff, SpokenUnitRow.text != ""],
                 {"text": "", "synthesis": {}})
    ids, sessions = await _ids(session, UnitAudioRow.unit_id, UnitAudioRow.session_id,
                               UnitAudioRow.created_at < cutoff)
    if ids:
        await session.execute(delete(UnitAudioRow).where(UnitAudioRow.unit_id.in_(ids)))
        report.add("unit_audio", len(ids), sessions)


async def _tool_io(session: AsyncSession, cutoff: datetime, report: ClassReport) -> None:
    await _erase(session, report, "operations", OperationRow.id, OperationRow.session_id,
                 [OperationRow.updated_at < cutoff,
                  OperationRow.status.in_(FINISHED_OPERATIONS),
                  _not_purged(OperationRow.arguments)],
                 {"arguments": PURGED, "receipt": PURGED})
    old = [ProposalRevisionRow.created_at < cutoff,
           _not_purged(ProposalRevisionRow.canonical_arguments)]
    proposals = (await session.scalars(
        select(ProposalRevisionRow.proposal_id).where(*old).distinct().limit(BATCH)
    )).all()
    if proposals:  # a revision is keyed by (proposal, revision): every old one of these
        erased = await session.execute(
            update(ProposalRevisionRow)
            .where(ProposalRevisionRow.proposal_id.in_(proposals), *old)
            .values(canonical_arguments=PURGED, summary="")
        )
        report.add("proposal_revisions", int(erased.rowcount))  # type: ignore[attr-defined]
    await _erase(session, report, "followups", FollowupRow.id, FollowupRow.session_id,
                 [FollowupRow.updated_at < cutoff, FollowupRow.status.in_(FINISHED_FOLLOWUPS),
                  or_(FollowupRow.reason != "", FollowupRow.when_text != "")],
                 {"reason": "", "when_text": ""})


async def _voice_references(session: AsyncSession, cutoff: datetime,
                            report: ClassReport) -> None:
    """References of voices revoked before ``cutoff`` or whose usage ended before it."""
    ended = set((await session.scalars(
        select(VoiceProfileRow.voice_id).where(VoiceProfileRow.usage_until < cutoff)
    )).all())
    revocations = (await session.execute(
        select(AuditEventRow.data).where(AuditEventRow.kind == "voice.revoked",
                                         AuditEventRow.at < cutoff)
    )).scalars().all()
    ended.update(d["voice_id"] for d in revocations if isinstance(d.get("voice_id"), str))
    if not ended:
        return
    rows = (await session.execute(
        select(VoiceVersionRow.voice_id, VoiceVersionRow.version)
        .where(VoiceVersionRow.voice_id.in_(sorted(ended)), VoiceVersionRow.ref_text != "")
        .limit(BATCH)
    )).all()
    for voice_id, version in rows:
        await session.execute(
            update(VoiceVersionRow)
            .where(VoiceVersionRow.voice_id == voice_id, VoiceVersionRow.version == version)
            .values(ref_audio=b"", ref_text="")
        )
    report.add("voice_versions", len(rows))


async def _audit(session: AsyncSession, cutoff: datetime, report: ClassReport) -> None:
    """Tombstone one batch of old payloads, claimed by one ``retention.tombstoned`` event."""
    rows = (await session.execute(
        select(AuditEventRow.seq, AuditEventRow.hash, AuditEventRow.chain,
               AuditEventRow.session_id)
        .where(AuditEventRow.at < cutoff, AuditEventRow.kind.not_in(KEPT_KINDS),
               cast(AuditEventRow.data, String).not_like(f'{{"{TOMBSTONE_KEY}"%'))
        .order_by(AuditEventRow.seq).limit(BATCH)
    )).all()
    by_chain: dict[str, list[tuple[int, str]]] = {}
    for seq, digest, chain, _ in rows:
        by_chain.setdefault(chain, []).append((seq, digest))
    for chain, events in by_chain.items():
        record = await append_in(
            session, TOMBSTONED_KIND, claim(events, before=report.before, days=report.days),
            at=report.now, chain=chain, actor="vocero.retention",
        )
        await session.execute(
            update(AuditEventRow).where(AuditEventRow.seq.in_([seq for seq, _ in events]))
            .values(data=tombstone(record.seq))
        )
    report.add("audit_events", len(rows), {row[3] for row in rows if row[3]})


_PURGERS: dict[str, Purger] = {
    "voice_references": _voice_references,
    "transcripts": _transcripts,
    "model_responses": _model_responses,
    "tool_io": _tool_io,
    "audit": _audit,
}
"""How each stored class is erased (the others are never written)."""
