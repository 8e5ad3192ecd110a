"""The dates and times of a record, paired (a date field and its time field, or one moment) and
said as one sentence each, worded by what the key says: "It starts on ...", "It was shipped on
...", "Its pickup date is ..."."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, time
from typing import Any

from vocero.speech.forms import (
    relative_day,
    spoken_date,
    spoken_time,
)
from vocero.speech.readout.context import ReadoutContext
from vocero.speech.readout.spoken import HHMM, ISO_DATE, ISO_MOMENT, elsewhere_of, instant
from vocero.speech.readout.words import (
    ADJECTIVES,
    EXPECTED_WORDS,
    IRREGULAR_PAST,
    META_WORDS,
    PARTICIPLES,
    PREPOSITIONS,
    VERB_STEMS,
    WHEN_WORDS,
    key_words,
    label_of,
)


@dataclass(frozen=True, slots=True)
class _When:
    """A date, a time, or both (a date field and its time field, or one moment)."""

    key: str
    stem: tuple[str, ...]
    day: date | None
    clock: time | None
    elsewhere: str = ""
    past: bool = False

    @property
    def meta(self) -> bool:
        """Bookkeeping ("created", "updated"): said last, if the budget allows."""
        return bool(self.stem) and self.stem[0] in META_WORDS


def whens_of(
    fields: list[tuple[str, Any]], record: Mapping[str, Any], ctx: ReadoutContext
) -> list[_When]:
    days: list[tuple[str, date]] = []
    clocks: list[tuple[str, time]] = []
    found: list[_When] = []
    for key, value in fields:
        if not isinstance(value, str):
            continue
        if ISO_DATE.match(value):
            try:
                days.append((key, date.fromisoformat(value)))
            except ValueError:
                continue
        elif ISO_MOMENT.match(value):
            moment = instant(value, ctx)
            if moment is not None:
                aware = moment.tzinfo is not None
                found.append(
                    _when(
                        key,
                        moment.date(),
                        moment.time(),
                        "" if aware else elsewhere_of(record, ctx),
                        ctx,
                    )
                )
        elif clock := HHMM.match(value):
            clocks.append((key, time(int(clock[1]), int(clock[2]))))
    free = list(clocks)
    for key, day in days:
        stem = _stem(key)
        pair = next((c for c in free if _stem(c[0]) == stem), None)
        if pair is None and free and (not stem or not _stem(free[0][0])):
            pair = free[0]
        if pair is not None:
            free.remove(pair)
            if not stem:
                key = pair[0]
        found.append(
            _when(
                key, day, pair[1] if pair else None, elsewhere_of(record, ctx) if pair else "", ctx
            )
        )
    found += [_when(key, None, clock, elsewhere_of(record, ctx), ctx) for key, clock in free]
    return found


def _when(
    key: str, day: date | None, clock: time | None, elsewhere: str, ctx: ReadoutContext
) -> _When:
    local = ctx.now.astimezone(ctx.zone)
    if day is None:
        past = False
    elif day != local.date() or clock is None:
        past = day < local.date()
    else:
        past = clock < local.time().replace(tzinfo=None)
    return _When(key, _stem(key), day, clock, elsewhere, past)


def _stem(key: str) -> tuple[str, ...]:
    """``start_time`` -> ("start",); ``day`` -> (); ``valid_until`` -> ("valid", "until")."""
    words = key_words(key)
    while words and words[-1] in WHEN_WORDS:
        words = words[:-1]
    return tuple(words)


def _when_words(when: _When, ctx: ReadoutContext, *, on: bool = True) -> str:
    """ "on Friday, December 4 at 10 AM"; "tomorrow, December 2" (no "on" before a relative
    day); without ``on``, the bare value: "Friday, December 4 at 10 AM", "10 AM"."""
    parts: list[str] = []
    if when.day is not None:
        said = spoken_date(when.day, locale=ctx.locale, today=ctx.today)
        relative = relative_day(when.day, ctx.today, ctx.locale)
        parts.append(f"on {said}" if on and not relative else said)
    if when.clock is not None:
        clock = spoken_time(when.clock, locale=ctx.locale) + when.elsewhere
        parts.append(f"at {clock}" if on or parts else clock)
    return " ".join(parts)


def when_clause(when: _When, ctx: ReadoutContext) -> str:
    """One sentence for a date or time, worded by what its key says it is: "It starts on ...",
    "It is expected on ...", "It was shipped on ...", "It is due tomorrow, ...", "It is on ...",
    else "Its pickup date is ..."."""
    stem = [w for w in when.stem if w not in ("is", "was")]
    words = _when_words(when, ctx)
    bare = _when_words(when, ctx, on=False)
    preposition = next((w for w in stem if w in PREPOSITIONS), "")
    if preposition:
        stem = stem[: stem.index(preposition)]
        words = f"{preposition} {bare}"
    head = stem[0] if stem else ""
    was = "was" if when.past else "is"
    if not stem:
        return f"It {was} {words}."
    if head in EXPECTED_WORDS:
        return f"It {was} expected {words}."
    verb = head[:-1] if head.endswith("s") and head[:-1] in VERB_STEMS else head
    if verb in VERB_STEMS and len(stem) == 1:
        return f"It {_past(verb) if when.past else verb + 's'} {words}."
    if head in ADJECTIVES and len(stem) == 1:
        return f"It {was} {head} {words}."
    if len(stem) == 1 and (head.endswith("ed") or head in PARTICIPLES):
        return f"It was {head} {words}." if when.past else f"It is {head} for {bare}."
    label = label_of(when.key)
    if label.rsplit(" ", 1)[-1] in ("date", "day", "time", "moment"):
        return f"Its {label} {was} {bare}."
    return f"Its {label} {was} {words}."


def _past(verb: str) -> str:
    return IRREGULAR_PAST.get(verb) or (verb + "d" if verb.endswith("e") else verb + "ed")


def item_when(when: _When, ctx: ReadoutContext) -> str:
    words = _when_words(when, ctx)
    head = when.stem[0] if when.stem else ""
    if head in EXPECTED_WORDS:
        return f"expected {words}"
    if head in ADJECTIVES or (
        len(when.stem) == 1 and when.past and (head.endswith("ed") or head in PARTICIPLES)
    ):
        return f"{head} {words}"
    return words
