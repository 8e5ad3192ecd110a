"""The statements of :mod:`vocero.store.record_ops`, built once per dialect (and shape) with
bound parameters and reused: building an ``INSERT … ON CONFLICT`` for every write (its
``excluded`` row proxies every column, its cache key walks every value) cost more than running
it, about 2 ms of CPU a spoken unit against 0.1 ms reused."""

from __future__ import annotations

from functools import cache
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Float,
    Select,
    Table,
    Update,
    bindparam,
    case,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite

from vocero.store.models import GenerationRow, SessionRow, SpokenUnitRow, TurnRow, UnitAudioRow
from vocero.store.units import DECIDED

SESSIONS = cast(Table, SessionRow.__table__)
TURNS = cast(Table, TurnRow.__table__)
GENERATIONS = cast(Table, GenerationRow.__table__)
UNITS = cast(Table, SpokenUnitRow.__table__)
AUDIO = cast(Table, UnitAudioRow.__table__)

TURN_COLUMNS = ("id", "session_id", "source", "text", "created_at")
GENERATION_COLUMNS = ("id", "session_id", "turn_id", "status", "generated_text", "heard_text",
                      "played_ms", "sent_ms", "created_at", "completed_at")
UNIT_COLUMNS = ("unit_id", "session_id", "generation_id", "turn_id", "question_revision",
                "index", "kind", "text", "claim_keys", "evidence", "planned_at", "disposition",
                "reason_code", "decided_at", "admitted_at", "audio_offset_ms", "audio_ms",
                "synthesis")
UNIT_DECISION = ("disposition", "reason_code", "decided_at", "admitted_at", "audio_offset_ms")
"""What a unit's later write changes until the unit is decided (then it is final)."""
AUDIO_COLUMNS = ("unit_id", "session_id", "sample_rate", "pcm", "truncated", "created_at")


def _insert(dialect: str, table: Table) -> Any:
    """The dialect's ``INSERT`` (both have ``ON CONFLICT``)."""
    return (postgresql if dialect == "postgresql" else sqlite).insert(table)


def _values(table: Table, names: tuple[str, ...]) -> dict[str, Any]:
    return {name: bindparam(name, type_=table.c[name].type) for name in names}


def _next_seq(table: Table) -> ColumnElement[Any]:
    """The session's next ``seq`` in ``table`` (parameter ``session_id``), computed by the
    statement that inserts it."""
    return (
        select(func.coalesce(func.max(table.c.seq), 0) + 1)
        .where(table.c.session_id == bindparam("session_id"))
        .correlate(None)
        .scalar_subquery()
    )


@cache
def session_holder() -> Select[Any]:
    """The session's holder (``p_session``), its row locked on PostgreSQL."""
    return (select(SESSIONS.c.owner_id).where(SESSIONS.c.id == bindparam("p_session"))
            .with_for_update())


@cache
def turn_insert(dialect: str) -> Any:
    """A turn with the session's next ``seq``; an id already there is left as it is."""
    values = _values(TURNS, TURN_COLUMNS) | {"seq": _next_seq(TURNS)}
    return _insert(dialect, TURNS).values(values).on_conflict_do_nothing(
        index_elements=[TURNS.c.id])


@cache
def turn_session() -> Select[Any]:
    return select(TURNS.c.session_id).where(TURNS.c.id == bindparam("p_turn"))


@cache
def generation_upsert(dialect: str, changes: tuple[str, ...], final: bool) -> Any:
    """A generation created with every column, or updated in ``changes`` (and its
    ``completed_at`` stamped once when ``final``), unless it is another session's."""
    statement = _insert(dialect, GENERATIONS).values(_values(GENERATIONS, GENERATION_COLUMNS))
    new = statement.excluded
    changed: dict[str, Any] = {name: new[name] for name in changes}
    if final:
        changed["completed_at"] = func.coalesce(GENERATIONS.c.completed_at, new.completed_at)
    return statement.on_conflict_do_update(
        index_elements=[GENERATIONS.c.id], set_=changed,
        where=GENERATIONS.c.session_id == bindparam("session_id"),
    )


def _held_update(owned: bool) -> Update:
    """The session's row (``p_session``), unless another process than ``p_owner`` holds it."""
    statement = update(SESSIONS).where(SESSIONS.c.id == bindparam("p_session"))
    if owned:
        statement = statement.where(or_(SESSIONS.c.owner_id.is_(None),
                                        SESSIONS.c.owner_id == bindparam("p_owner")))
    return statement


@cache
def session_update(names: tuple[str, ...], owned: bool) -> Update:
    """Set ``names`` (parameters ``p_<name>``) of a session this process may write to."""
    return _held_update(owned).values(
        {name: bindparam(f"p_{name}", type_=SESSIONS.c[name].type) for name in names})


@cache
def session_close(owned: bool) -> Update:
    """Close a session this process may write to at ``p_now``, its first ``closed_at`` kept."""
    now = bindparam("p_now", type_=SESSIONS.c.closed_at.type)
    return _held_update(owned).values(
        state=bindparam("p_state", type_=SESSIONS.c.state.type),
        closed_at=func.coalesce(SESSIONS.c.closed_at, now), lease_expires_at=None)


@cache
def unit_upsert(dialect: str, synthesis: bool) -> Any:
    """A unit inserted with the session's next ``seq``, or updated: its decision until it is
    decided, the longest audio length (``p_audio_ms``) and, with ``synthesis``, the synthesis
    settings."""
    statement = _insert(dialect, UNITS).values(
        _values(UNITS, UNIT_COLUMNS) | {"seq": _next_seq(UNITS)})
    undecided = UNITS.c.disposition.not_in(sorted(DECIDED))
    changed: dict[str, Any] = {
        name: case((undecided, statement.excluded[name]), else_=UNITS.c[name])
        for name in UNIT_DECISION
    }
    longest = func.greatest if dialect == "postgresql" else func.max
    changed["audio_ms"] = longest(bindparam("p_audio_ms", type_=Float()),
                                  func.coalesce(UNITS.c.audio_ms, 0.0))
    if synthesis:
        changed["synthesis"] = statement.excluded.synthesis
    return statement.on_conflict_do_update(index_elements=[UNITS.c.unit_id], set_=changed)


@cache
def audio_room() -> Select[Any]:
    """Whether the unit (``p_unit``) is known, and the audio its session (``p_session``) keeps
    for its other units."""
    known = select(UNITS.c.unit_id).where(UNITS.c.unit_id == bindparam("p_unit")).exists()
    used = select(func.coalesce(func.sum(func.length(AUDIO.c.pcm)), 0)).where(
        AUDIO.c.session_id == bindparam("p_session"), AUDIO.c.unit_id != bindparam("p_unit"),
    ).scalar_subquery()
    return select(known, used)


@cache
def audio_upsert(dialect: str) -> Any:
    statement = _insert(dialect, AUDIO).values(_values(AUDIO, AUDIO_COLUMNS))
    return statement.on_conflict_do_update(
        index_elements=[AUDIO.c.unit_id],
        set_={name: statement.excluded[name] for name in AUDIO_COLUMNS[1:]},
    )
