"""The call-back rule (docs/followups.md): a follow-up time must come from words the caller said or
agreed to.

:func:`judge` compares the model's ``when`` with the conversation *as heard* (caller turns,
assistant text as played; never the model's own paraphrase):

* **caller_words** - the ``when`` shares a time word with the caller's most recent line that
  carries one ("kal shaam" / "tomorrow evening" share ``tomorrow`` and ``evening``), and names
  no other value for a slot that line also named ("tomorrow at 4" vs "Monday at 4pm": both name
  a day, and not the same one);
* **when_agreed** - the caller answered "yes" (haan, avunu, ...) to a heard assistant line that
  named the time, and said no time of their own since;
* otherwise the record is refused (``when_mismatch``), and the question to ask is a read-back of
  the time ("Shall we call you at four tomorrow afternoon?") so the caller can correct it - or,
  when that read-back was already heard without a yes, a plain "when?" (never a loop).

A ``when`` that names a calendar date giving no usable moment ("February 30", "the 32nd", a date
already past or more than a year ahead: :attr:`~vocero.followups.due.Due.date_unusable`) is
refused as a ``when`` with no time word is: the rule asks "when?", it never records the 11:00
next-day fallback for it.

A caller line in a language the tables do not cover (another script, or another locale with no
word the tables know) cannot be checked: the rule asks, it never guesses. The check is lexical:
a caller who agrees in words that share no time word is refused, and the read-back recovers it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from vocero.contracts.ports import Message
from vocero.followups import lexicon as lx
from vocero.followups.due import Due
from vocero.followups.timewords import Reading, has_native_script, read, tokens

Basis = Literal["caller_words", "when_agreed"]
COVERED_LANGUAGES = frozenset({"en", "hi", "te"})
_OTHER_SCRIPT = re.compile(
    r"[^\s\d\W_a-zA-Z\u00c0-\u024f\u0900-\u097f\u0c00-\u0c7f\u200c\u200d]"
)
"""A letter outside Latin, Devanagari and Telugu (combining marks of those two are \\W-safe)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    accepted: bool
    basis: Basis | None = None
    detail: str = ""
    """Why not: ``no_time_word`` (the ``when`` names no time), ``date_unusable`` (it names a date
    that gives no usable moment), ``no_caller_time`` (nobody said one), ``no_shared_time_word``,
    ``conflicting_time_word``, ``language_not_covered``."""
    evidence: str = ""
    """The heard line the ``when`` was checked against."""


def judge(
    when: str, history: Sequence[Message], locale: str = "en-US", due: Due | None = None
) -> Verdict:
    """Whether ``when`` may be recorded, given the conversation as heard and (``due``) what its
    words resolve to."""
    wanted = read(when)
    if not wanted:
        return Verdict(False, detail="no_time_word")
    if due is not None and due.date_unusable:
        return Verdict(False, detail="date_unusable")
    caller = _latest_caller_time(history)
    agreed = _agreement(history)
    if agreed is not None and (caller is None or agreed[0] > caller[0]):
        verdict = _compare(wanted, agreed[1], "when_agreed")
        if verdict.accepted:
            return verdict
    latest = _latest_caller_line(history)
    if latest is not None and not covered(latest[1], locale) and (
        caller is None or latest[0] > caller[0]) and (agreed is None or latest[0] > agreed[0]):
        return Verdict(False, detail="language_not_covered", evidence=latest[1])
    if caller is None:
        return Verdict(False, detail="no_caller_time")
    return _compare(wanted, caller[1], "caller_words")


def _compare(wanted: Reading, line: str, basis: Basis) -> Verdict:
    heard = read(line).slots()
    mine = wanted.slots()
    if not any(values & heard.get(slot, frozenset()) for slot, values in mine.items()):
        return Verdict(False, detail="no_shared_time_word", evidence=line)
    for slot, values in mine.items():
        if slot in heard and not values & heard[slot]:
            return Verdict(False, detail="conflicting_time_word", evidence=line)
    return Verdict(True, basis=basis, evidence=line)


# -------------------------------------------------------------------------------- history


def _lines(history: Sequence[Message]) -> list[tuple[int, Message]]:
    return [(i, m) for i, m in enumerate(history) if m.role in ("user", "assistant")]


def _latest_caller_time(history: Sequence[Message]) -> tuple[int, str] | None:
    for index, message in reversed(_lines(history)):
        if message.role == "user" and read(message.content):
            return index, message.content
    return None


def _latest_caller_line(history: Sequence[Message]) -> tuple[int, str] | None:
    for index, message in reversed(_lines(history)):
        if message.role == "user" and message.content.strip():
            return index, message.content
    return None


def _agreement(history: Sequence[Message]) -> tuple[int, str] | None:
    """The latest heard assistant line with a time word that the caller's next line confirmed:
    ``(index of the answer, the assistant's words)``. A caller line with a time word of its own
    ends the search: the caller's words are more recent than any agreement before them."""
    lines = _lines(history)
    for position in range(len(lines) - 1, -1, -1):
        index, message = lines[position]
        if message.role != "user":
            continue
        if read(message.content):
            return None
        if not confirming(message.content) or position == 0:
            continue
        _, before = lines[position - 1]
        if before.role == "assistant" and read(before.content):
            return index, before.content
    return None


def confirming(text: str) -> bool:
    """A plain yes: a confirming word and nothing that negates it."""
    words = tokens(text)
    if any(w in lx.NEGATING for w in words):
        return False
    return any(w in lx.CONFIRMING for w in words) or " ".join(words) in (
        "that works", "sounds good", "go ahead", "theek hai", "thik hai", "ठीक है")


def covered(text: str, locale: str) -> bool:
    """Whether the tables can read ``text``: no letter of another script, and, when the call's
    locale is another language, at least one word the tables know."""
    if _OTHER_SCRIPT.search(text):
        return False
    if locale.split("-")[0].lower() in COVERED_LANGUAGES or has_native_script(text):
        return True
    return bool(read(text)) or confirming(text)


# ------------------------------------------------------------------------------- read-back

_HOUR_WORDS = ("twelve", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
               "ten", "eleven")
_MINUTES = {15: "fifteen", 30: "thirty", 45: "forty-five"}
_SMALL = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
          "eleven", "twelve")


def question(wanted: Reading, due: Due, now: datetime, history: Sequence[Message],
             channel: str = "phone") -> str:
    """What to ask after a refusal: a read-back of the time, unless it was already heard; "when?"
    when the words name no time, or a date that gives none (never the fallback read back)."""
    if not wanted or due.date_unusable:
        return ("When would you like us to call you back?" if channel == "phone"
                else "By when would you like us to do that?")
    phrase = spoken_time(wanted, due.at, now)
    asked = (f"Shall we call you {phrase}?" if channel == "phone"
             else f"Shall we have that done {phrase}?")
    last = next((m.content for m in reversed(history) if m.role == "assistant"), "")
    if phrase in last:
        return "What day and time would suit you for the call?"
    return asked


def spoken_time(wanted: Reading, due: datetime, now: datetime) -> str:
    """``due`` as a short spoken phrase whose words the rule itself reads back as time words:
    "in ten minutes", "at four tomorrow afternoon", "at ten on Friday morning"."""
    if wanted.delays and not wanted.days and not wanted.clocks:
        minutes = wanted.delays[-1]
        if minutes % 60 == 0:
            hours = minutes // 60
            return "in an hour" if hours == 1 else f"in {_number(hours)} hours"
        return f"in {_number(minutes)} minutes"
    offset = (due.date() - now.astimezone(due.tzinfo).date()).days
    day = _day_phrase(wanted.days[-1] if wanted.days else "", offset, due)
    if due.hour == 12 and due.minute == 0:
        return f"at noon {day}"
    clock = _HOUR_WORDS[due.hour % 12]
    if due.minute:
        clock += " " + _MINUTES.get(due.minute, f"{due.minute:02d}")
    part = _part(due.hour)
    if day == "today":
        return f"at {clock} {'tonight' if part == 'night' else 'this ' + part}"
    if day == "tomorrow" or (day.startswith("on ") and day.endswith("day")):
        return f"at {clock} {day} {part}"
    return f"at {clock} {'at night' if part == 'night' else 'in the ' + part} {day}"


def _day_phrase(said: str, offset: int, due: datetime) -> str:
    """The day in the same kind of words the ``when`` used (a weekday stays a weekday, so the
    caller's "yes" agrees with words the model will use again). A weekday a week or more ahead
    ("next Friday" said on a Monday, ADR-0040) is said with its date: "on Friday" alone would be
    heard as this week's. A day of the month said alone is said with the date it resolved to
    ("on the 5th, January 5"): the caller hears which month, and "the 5th" or "January 5" both
    agree with it."""
    if said in lx.WEEKDAY_ORDER:
        return f"on {due:%A}" if offset < 7 else f"on {due:%A}, {due:%B} {due.day}"
    if said == "week_next":
        return f"next week on {due:%A}"
    if said == "day_after":
        return "the day after tomorrow"
    if said.startswith("in_days:"):
        return f"in {_number(offset)} days, on {due:%A}"
    if said.startswith("date:"):
        return f"on {due:%B} {due.day}"
    if said.startswith("dom:"):
        return f"on the {_ordinal(due.day)}, {due:%B} {due.day}"
    if offset == 0:
        return "today"
    if offset == 1:
        return "tomorrow"
    return f"on {due:%A}" if offset < 7 else f"on {due:%B} {due.day}"


def _part(hour: int) -> str:
    if 5 <= hour < 12:
        return "morning"
    if 12 <= hour < 17:
        return "afternoon"
    if 17 <= hour < 21:
        return "evening"
    return "night"


def _ordinal(day: int) -> str:
    """``14`` -> ``14th``, ``1`` -> ``1st``, ``22`` -> ``22nd``."""
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def _number(value: int) -> str:
    return _SMALL[value] if 0 <= value < len(_SMALL) else str(value)
