"""What a read-out is said against (:class:`ReadoutContext`: the caller's clock, zone, locale,
words and word budget) and what it gives (:class:`Readout`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from vocero.speech.model import UnitKind


class TemplateError(KeyError):
    """A placeholder of the template has no value in the result."""


@dataclass(frozen=True, slots=True)
class ReadoutContext:
    """What a read-out is said against: the caller's clock, zone, locale and words."""

    now: datetime
    """Aware; relative dates are said against it in the caller's timezone."""
    timezone: str = "UTC"
    locale: str = "en-US"
    caller_words: str = ""
    """What the caller said this session, to know which identifiers they used."""
    word_budget: int = 60

    @property
    def zone(self) -> ZoneInfo:
        return _zone(self.timezone)

    @property
    def today(self) -> date:
        return self.now.astimezone(self.zone).date()


@dataclass(frozen=True, slots=True)
class Readout:
    """A result as said: the words and the kind of unit they make."""

    text: str
    kind: UnitKind


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")
