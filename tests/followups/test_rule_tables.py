"""Seed 003's call-back rule, as tables per language: each row is the caller's line as heard,
the ``when`` the model handed the tool, and the verdict. Accepted rows are recorded by the
built-in tool; refused rows answer ``NOT recorded`` (``when_mismatch``) and ask a read-back."""

from __future__ import annotations

from datetime import datetime

import pytest
from followup_support import START, heard

from vocero.contracts.builtins import CanonicalError, Context
from vocero.contracts.clock import VirtualClock
from vocero.followups.rule import judge
from vocero.followups.tool import MAX_REASON, SCHEMA, FollowupTools

ACCEPT = "caller_words"
AGREED = "when_agreed"

ENGLISH = [
    ("call me back tomorrow at 4", "tomorrow 4pm", ACCEPT),
    ("can you ring me in 10 minutes", "in 10 minutes", ACCEPT),
    ("friday 3pm works for me", "Friday at 3 PM", ACCEPT),
    ("this evening please", "today evening", ACCEPT),
    ("tomorrow at 11am would be great", "tomorrow 11am", ACCEPT),
    ("any time after six o'clock", "6pm today", ACCEPT),
    ("half past four tomorrow", "tomorrow at 4:30pm", ACCEPT),
    ("call me on december 24th in the morning", "December 24 at 10am", ACCEPT),
    ("ring me sometime", "Friday 3pm", "no_caller_time"),
    ("call me back tomorrow at 4", "Monday 4pm", "conflicting_time_word"),
    ("call me tomorrow", "Friday at 3pm", "no_shared_time_word"),
    ("please call me back", "later", "no_time_word"),
    ("my order number is 12345", "12 o'clock", "no_caller_time"),
    ("call me at 4", "in 4 hours", "no_shared_time_word"),
    ("in the evening", "tomorrow morning", "no_shared_time_word"),
    ("tomorrow evening", "tomorrow morning", "conflicting_time_word"),
    ("not tomorrow, friday", "tomorrow 4pm", "no_shared_time_word"),
    ("tomorrow doesn't work, try friday", "Friday 11am", ACCEPT),
    ("call me back on the 14th at 3 pm", "the 14th at 3pm", ACCEPT),
    ("march the 3rd in the morning", "March 3rd at 10am", ACCEPT),
    ("call me on the 14th at 3", "the 15th at 3pm", "conflicting_time_word"),
    ("not on the 14th, the 15th", "on the 14th", "no_shared_time_word"),
    # a day of the month and a month day share no word: the rule does not resolve either, so
    # "December 14" could be another 14th than the caller's; its read-back names both
    ("call me on the 14th", "December 14", "no_shared_time_word"),
]
HINDI = [
    ("kal shaam 4 baje call karna", "tomorrow 4pm", ACCEPT),
    ("kal subah call kijiye", "kal subah 10 baje", ACCEPT),
    ("10 minute mein call karo", "in 10 minutes", ACCEPT),
    ("parso dopahar call karna", "day after tomorrow afternoon", ACCEPT),
    ("somvar ko call karna", "Monday 11am", ACCEPT),
    ("aaj raat 9 baje", "tonight at 9", ACCEPT),
    ("कल शाम 4 बजे फ़ोन कीजिए", "tomorrow 4pm", ACCEPT),
    ("दस मिनट में फ़ोन करना", "in 10 minutes", ACCEPT),
    ("शुक्रवार को सुबह", "Friday morning", ACCEPT),
    ("kabhi bhi call kar lena", "Friday 3pm", "no_caller_time"),
    ("kal shaam call karna", "Monday evening", "conflicting_time_word"),
    ("kal nahi, parso call karna", "tomorrow 11am", "no_shared_time_word"),
    ("कभी भी फ़ोन कर देना", "tomorrow 11am", "no_caller_time"),
    ("कल सुबह", "Friday 3pm", "no_shared_time_word"),
    ("14 December ko shaam 4 baje call karna", "December 14 4pm", ACCEPT),
    ("15 December ko shaam 4 baje", "December 14 4pm", "conflicting_time_word"),
]
TELUGU = [
    ("repu sayantram 4 gantalaku call cheyandi", "tomorrow 4pm", ACCEPT),
    ("padi nimishallo call cheyandi", "in 10 minutes", ACCEPT),
    ("shukravaram udayam call cheyandi", "Friday 10am", ACCEPT),
    ("ivala ratri call cheyandi", "tonight", ACCEPT),
    ("రేపు సాయంత్రం నాలుగు గంటలకు కాల్ చేయండి", "tomorrow 4pm", ACCEPT),
    ("ఎల్లుండి ఉదయం ఫోన్ చేయండి", "day after tomorrow morning", ACCEPT),
    ("సాయంత్రానికి ఫోన్ చేయండి", "this evening", ACCEPT),
    ("eppudaina call cheyandi", "tomorrow 4pm", "no_caller_time"),
    ("ఎప్పుడైనా కాల్ చేయండి", "tomorrow 4pm", "no_caller_time"),
    ("repu udayam", "Monday morning", "conflicting_time_word"),
    ("repu kaadu, ellundi", "day after tomorrow", ACCEPT),
    ("December 14 na sayantram 4 gantalaku call cheyandi", "December 14 4pm", ACCEPT),
]


def verdict(line: str, when: str, locale: str = "en-US") -> str:
    found = judge(when, heard(("user", line)), locale)
    return found.basis if found.accepted and found.basis else found.detail


@pytest.mark.parametrize(("line", "when", "expected"), ENGLISH)
def test_english(line: str, when: str, expected: str) -> None:
    assert verdict(line, when) == expected


@pytest.mark.parametrize(("line", "when", "expected"), HINDI)
def test_hindi(line: str, when: str, expected: str) -> None:
    assert verdict(line, when, "hi-IN") == expected


@pytest.mark.parametrize(("line", "when", "expected"), TELUGU)
def test_telugu(line: str, when: str, expected: str) -> None:
    assert verdict(line, when, "te-IN") == expected


READBACK = "Shall we call you at four tomorrow afternoon?"


@pytest.mark.parametrize(("answer", "locale", "expected"), [
    ("yes please", "en-US", AGREED),
    ("sure, that works", "en-US", AGREED),
    ("haan ji", "hi-IN", AGREED),
    ("हाँ, ठीक है", "hi-IN", AGREED),
    ("avunu", "te-IN", AGREED),
    ("సరే", "te-IN", AGREED),
    ("no", "en-US", "no_caller_time"),
    ("nahi", "hi-IN", "no_caller_time"),
    ("vaddu", "te-IN", "no_caller_time"),
    ("yes but not tomorrow", "en-US", "no_caller_time"),
])
def test_a_time_the_caller_heard_and_agreed_to(answer: str, locale: str, expected: str) -> None:
    history = heard(("user", "ring me sometime"), ("assistant", READBACK), ("user", answer))
    found = judge("tomorrow 4pm", history, locale)
    assert (found.basis if found.accepted else found.detail) == expected


def test_an_agreement_is_superseded_by_the_callers_own_later_time() -> None:
    history = heard(("user", "ring me sometime"), ("assistant", READBACK), ("user", "yes"),
                    ("user", "actually make it monday at 10"))
    assert not judge("tomorrow 4pm", history).accepted
    assert judge("Monday 10am", history).basis == ACCEPT


def test_the_most_recent_time_bearing_line_is_the_evidence() -> None:
    history = heard(("user", "call me tomorrow"), ("assistant", "Of course."),
                    ("user", "no wait, friday is better"), ("user", "about the invoice"))
    assert judge("Friday 11am", history).accepted
    assert judge("tomorrow", history).detail == "no_shared_time_word"


@pytest.mark.parametrize(("line", "locale"), [
    ("llámame mañana a las cuatro", "es-ES"),
    ("明天下午四点给我打电话", "en-US"),
    ("நாளை மாலை அழைக்கவும்", "ta-IN"),
])
def test_another_language_is_asked_never_guessed(line: str, locale: str) -> None:
    history = heard(("user", "call me tomorrow at 4"), ("user", line))
    assert judge("tomorrow 4pm", history, locale).detail == "language_not_covered"


# ------------------------------------------------------------------ through the tool


def context(*lines: tuple[str, str], now: datetime = START, locale: str = "en-US") -> Context:
    return Context(tenant="acme", timezone="Europe/Madrid", now=now, server="vocero",
                   history=heard(*lines), locale=locale)


def tool() -> FollowupTools:
    return FollowupTools(store=None, clock=VirtualClock())  # type: ignore[arg-type]


def refusal(ctx: Context, **arguments: str) -> CanonicalError:
    with pytest.raises(CanonicalError) as caught:
        tool().canonicalize("followups.record", arguments, ctx)
    return caught.value


def test_an_invented_time_is_not_recorded_and_the_time_is_read_back() -> None:
    ctx = context(("user", "ring me sometime about my order"))
    error = refusal(ctx, when="tomorrow at 4pm", reason="order question")
    assert error.reason_code == "when_mismatch"
    assert error.result is not None
    assert error.result["status"] == "NOT recorded"
    assert error.result["reason"] == "when_mismatch"
    assert error.question == READBACK


def test_the_read_back_is_not_asked_twice() -> None:
    ctx = context(("user", "ring me sometime"), ("assistant", READBACK), ("user", "hmm"))
    error = refusal(ctx, when="tomorrow at 4pm", reason="order question")
    assert error.question == "What day and time would suit you for the call?"


def test_a_when_without_any_time_asks_when() -> None:
    error = refusal(context(("user", "call me back")), when="soon", reason="the refund")
    assert error.question == "When would you like us to call you back?"


def test_nothing_heard_means_nothing_recorded() -> None:
    """Outside a live call (or with no heard history) the tool cannot check: it refuses."""
    assert refusal(context(), when="tomorrow 4pm", reason="x").reason_code == "when_mismatch"


def test_accepted_when_is_canonical_in_the_callers_zone() -> None:
    ctx = context(("user", "kal shaam 4 baje call karna"), locale="hi-IN")
    canonical = tool().canonicalize("followups.record", {
        "when": " tomorrow   4pm ", "reason": "invoice  question"}, ctx)
    assert canonical.arguments == {
        "when": "tomorrow 4pm", "reason": "invoice question", "channel": "phone",
        "timezone": "Europe/Madrid", "due_at": "2026-12-04T16:00:00+01:00"}


@pytest.mark.parametrize(("line", "when", "locale"), [
    ("call me next friday at 3", "next Friday 3pm", "en-US"),
    ("agle shukravar teen baje call karna", "agle shukravar 3 baje", "hi-IN"),
    ("vachhe shukravaram moodu gantalaku call cheyandi", "vachhe shukravaram 3 pm", "te-IN"),
])
def test_next_friday_is_the_friday_of_the_week_after(line: str, when: str, locale: str) -> None:
    """ADR-0040: on a Thursday, "next Friday" is the 11th, as the rest of the product reads it
    (it was tomorrow, the 4th); "Friday" alone is still tomorrow."""
    ctx = context(("user", line), locale=locale)
    due = tool().canonicalize("followups.record", {"when": when, "reason": "invoice"}, ctx)
    assert due.arguments["due_at"] == "2026-12-11T15:00:00+01:00"
    plain = tool().canonicalize("followups.record", {"when": "Friday 3pm", "reason": "x"},
                                context(("user", "call me friday at 3")))
    assert plain.arguments["due_at"] == "2026-12-04T15:00:00+01:00"


def test_the_read_back_of_next_friday_says_its_date_and_reads_back_as_it() -> None:
    """"on Friday" alone would be heard as tomorrow: a weekday a week or more ahead is read back
    with its date, and the caller's "yes" to it records that day."""
    error = refusal(context(("user", "ring me sometime")), when="next friday 3pm", reason="x")
    assert error.question == "Shall we call you at three in the afternoon on Friday, December 11?"
    ctx = context(("user", "ring me sometime"), ("assistant", error.question), ("user", "yes"))
    for when in ("next Friday 3pm", "Friday December 11 at 3pm"):
        agreed = tool().canonicalize("followups.record", {"when": when, "reason": "x"}, ctx)
        assert agreed.arguments["due_at"] == "2026-12-11T15:00:00+01:00", when


@pytest.mark.parametrize(("arguments", "reason_code", "result_reason"), [
    ({"when": "no follow-up needed", "reason": "resolved"}, "no_followup_needed",
     "no_followup_needed"),
    ({"when": "tomorrow 4pm", "reason": "none", "channel": "none"}, "no_followup_needed",
     "no_followup_needed"),
    ({"when": "zaroorat nahi", "reason": "ho gaya"}, "no_followup_needed", "no_followup_needed"),
    ({"when": "avasaram ledu", "reason": "ayipoyindi"}, "no_followup_needed",
     "no_followup_needed"),
    ({"when": "tomorrow 4pm", "reason": "  "}, "arguments_unresolved", "reason_missing"),
    ({"when": "tomorrow 4pm", "reason": "x", "channel": "pigeon"}, "arguments_unresolved",
     "channel_unknown"),
    ({"when": "tomorrow 4pm", "reason": "spam " * 12_000}, "arguments_unresolved",
     "reason_too_long"),
    ({"when": "tomorrow 4pm " + "and " * 70, "reason": "x"}, "arguments_unresolved",
     "when_too_long"),
])
def test_nothing_is_recorded_without_a_follow_up_or_a_reason(
    arguments: dict[str, str], reason_code: str, result_reason: str
) -> None:
    error = refusal(context(("user", "call me tomorrow at 4")), **arguments)
    assert error.reason_code == reason_code
    assert error.result is not None
    assert (error.result["status"], error.result["reason"]) == ("NOT recorded", result_reason)


def test_a_reason_is_bounded_whole_never_cut() -> None:
    """Issue 26 (2): ``reason`` took 60,000 characters. Up to :data:`MAX_REASON` it is kept as
    said; past it nothing is recorded and the caller is asked for a short one."""
    ctx = context(("user", "call me tomorrow at 4"))
    longest = ("word " * MAX_REASON)[:MAX_REASON].strip() + "s"
    canonical = tool().canonicalize("followups.record", {"when": "tomorrow 4pm",
                                                         "reason": longest}, ctx)
    assert canonical.arguments["reason"] == longest
    error = refusal(ctx, when="tomorrow 4pm", reason=longest + " more")
    assert error.question == "Briefly, what should the follow-up be about?"
    assert error.result is not None and error.result["max_chars"] == MAX_REASON
    assert SCHEMA["properties"]["reason"]["maxLength"] == MAX_REASON


@pytest.mark.parametrize(("reason", "channel", "expected"), [
    ("question about the invoice", None, "phone"),
    ("send the quotation", None, "task"),
    ("review the recording of the call", None, "phone"),  # "call" in the reason: a call-back
    ("review the recording", None, "task"),
    ("email the brochure", "email", "task"),
    ("anything", "callback", "phone"),
    ("anything", "task", "task"),
])
def test_channel(reason: str, channel: str | None, expected: str) -> None:
    arguments = {"when": "tomorrow 4pm", "reason": reason}
    if channel is not None:
        arguments["channel"] = channel
    canonical = tool().canonicalize("followups.record", arguments,
                                    context(("user", "tomorrow at 4 please")))
    assert canonical.arguments["channel"] == expected


# ------------------------------------------------------------ a day of the month, a month day


@pytest.mark.parametrize(("line", "when", "locale", "due_at"), [
    ("call me back on the 14th at 3 pm", "on the 14th at 3pm", "en-US",
     "2026-12-14T15:00:00+01:00"),
    ("ring me on the 2nd", "the 2nd", "en-US",  # already past this month: next month's
     "2027-01-02T11:00:00+01:00"),
    ("on the fourteenth in the evening", "the 14th in the evening", "en-US",
     "2026-12-14T18:00:00+01:00"),
    ("march the 3rd in the morning", "March the 3rd at 10am", "en-US",
     "2027-03-03T10:00:00+01:00"),
    ("december 14th at 4", "December 14th 4pm", "en-US", "2026-12-14T16:00:00+01:00"),
    ("the 5th of january 2027, at 9", "the 5th of January 2027 at 9am", "en-US",
     "2027-01-05T09:00:00+01:00"),
    # Hindi and Telugu name no month or ordinal of their own (the lexicons list none): callers
    # say English month names, read as in English
    ("14 December ko shaam 4 baje call karna", "14 December shaam 4 baje", "hi-IN",
     "2026-12-14T16:00:00+01:00"),
    ("December 14 na sayantram 4 gantalaku call cheyandi", "December 14 sayantram 4 gantalaku",
     "te-IN", "2026-12-14T16:00:00+01:00"),
])
def test_a_day_of_the_month_or_a_month_day_is_booked_for_that_day(
    line: str, when: str, locale: str, due_at: str
) -> None:
    """"on the 14th" was no time word: its time alone was read, so "on the 14th at 3pm" said on
    the 3rd was booked for 15:00 that same day, and "March the 3rd" for 11:00 the next day. Both
    are read by the one reader of dates (ADR-0039), in the caller's zone."""
    ctx = context(("user", line), locale=locale)
    canonical = tool().canonicalize("followups.record", {"when": when, "reason": "invoice"}, ctx)
    assert canonical.arguments["due_at"] == due_at


def test_the_read_back_of_a_day_of_the_month_says_its_date_and_reads_back_as_it() -> None:
    """The caller hears which month "the 14th" is; a "yes" records it, in either words."""
    error = refusal(context(("user", "ring me sometime")), when="the 14th at 3pm", reason="x")
    assert error.question == (
        "Shall we call you at three in the afternoon on the 14th, December 14?"
    )
    ctx = context(("user", "ring me sometime"), ("assistant", error.question), ("user", "yes"))
    for when in ("the 14th at 3pm", "December 14 at 3pm"):
        agreed = tool().canonicalize("followups.record", {"when": when, "reason": "x"}, ctx)
        assert agreed.arguments["due_at"] == "2026-12-14T15:00:00+01:00", when


@pytest.mark.parametrize("when", [
    "February 30",  # no such date
    "February 30 at 3pm",  # was 15:00 today: the time alone
    "the 32nd",
    "March 3, 2025",  # already past
    "March 3, 2028",  # more than a year ahead
    "December 3 at 8am",  # already past today
])
def test_a_date_that_gives_no_usable_time_is_asked_never_booked_for_tomorrow(when: str) -> None:
    """As a ``when`` with no time word: nothing is recorded and the caller is asked when, never
    read the 11:00 next-day fallback (it was recorded, for a day the caller did not ask)."""
    for channel, asked in (("phone", "When would you like us to call you back?"),
                           ("task", "By when would you like us to do that?")):
        error = refusal(context(("user", f"call me {when}")), when=when, reason="x",
                        channel=channel)
        assert error.reason_code == "when_mismatch"
        assert error.result is not None
        assert (error.result["status"], error.result["detail"]) == (
            "NOT recorded", "date_unusable")
        assert error.question == asked
