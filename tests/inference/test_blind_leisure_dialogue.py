"""Lines of the blind leisure-centre suite, served from a profile's own material (issue 42).

Sans-IO, as :mod:`tests.inference.test_cpu_dialogue`: :func:`dialogue.decide` on a profile
shaped as the blind leisure-centre one is, in another business (a bicycle workshop, with names
no suite uses): a call-back at a time said in words, a write whose own words and examples
outweigh a read that shares its identifier, a bare date field explained only by its tool's
line, a bare free-text field the caller says in the line.
"""

from __future__ import annotations

import datetime as dt
from functools import cache
from zoneinfo import ZoneInfo

from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import LlmRequest, Message, ToolIntent
from vocero.followups.due import resolve_due
from vocero.inference.dialogue import intents
from vocero.inference.dialogue import manager as dialogue

ZONE = ZoneInfo("Europe/Lisbon")
TODAY = dt.date(2026, 12, 7)  # a Monday
NOW = dt.datetime(2026, 12, 7, 10, 0, tzinfo=ZONE)
SYSTEM = Message(role="system", content="You answer the phone for Spoke Lane Cycles.")
RIDER = {"type": "string", "pattern": "^SC[0-9]{5}$",
         "description": "The rider's club number: SC and five digits, like SC40721"}  # fmt: skip
PLAN = ToolDefinition(
    name="service_plan.lookup",
    description="A rider's service plan: its level, whether it is running or on hold, and when "
    "it renews.",
    input_schema={"type": "object", "properties": {"rider_no": RIDER}, "required": ["rider_no"]},
    examples=["Is my service plan still running?", "When does my plan renew?"],
)
SUSPEND = ToolDefinition(
    name="service_plan.suspend",
    description="Hibernate a service plan from a date for a number of whole months; nothing is "
    "charged while it sleeps.",
    input_schema={
        "type": "object",
        "properties": {
            "rider_no": RIDER,
            "starting": {"type": "string", "format": "date"},
            "months": {"type": "integer", "minimum": 1, "maximum": 6,
                       "description": "Whole months, 1 to 6"},
        },
        "required": ["rider_no", "starting", "months"],
    },
    examples=["I want to hibernate my service plan", "Can I put my plan on hold for a while?"],
)  # fmt: skip
CALLBACK = ToolDefinition(
    name="desk.ring_back",
    builtin="followups.record",
    description="Have the workshop ring the caller back at the time they asked for.",
    input_schema={
        "type": "object",
        "properties": {"when": {"type": "string"}, "reason": {"type": "string"}},
        "required": ["when", "reason"],
    },
)
SLOTS = ToolDefinition(
    name="workshop.open_bays",
    description="Free repair bays in the workshop; visit_day is the date as YYYY-MM-DD.",
    input_schema={
        "type": "object",
        "properties": {"visit_day": {"type": "string"},
                       "bay_size": {"type": "string", "enum": ["small", "large"]}},
        "required": ["visit_day", "bay_size"],
    },
)  # fmt: skip
LEFT = ToolDefinition(
    name="found_items.report",
    description="Report something a rider left at the workshop; thing says what it is and what "
    "it looks like.",
    input_schema={
        "type": "object",
        "properties": {
            "thing": {"type": "string"},
            "spot": {"type": "string", "enum": ["front_counter", "repair_bay", "yard"]},
            "left_on": {"type": "string", "format": "date"},
        },
        "required": ["thing", "spot", "left_on"],
    },
)
TOOLS = [PLAN, SUSPEND, CALLBACK, SLOTS, LEFT]


@cache
def model() -> dialogue._Memo:
    return dialogue._Memo(intents.IntentModel.fit(TOOLS, []))


def called(line: str) -> ToolIntent | None:
    request = LlmRequest(messages=[SYSTEM, Message(role="user", content=line)], tools=TOOLS)
    decision = dialogue.decide(request, today=TODAY, model=model())
    return decision.intent if isinstance(decision, dialogue.Call) else None


def test_a_call_back_keeps_the_hour_said_in_words() -> None:
    # Was "on Thursday": the hour in words was dropped and the call-back fell to 11:00.
    line = "Please have the head mechanic call me on Thursday at nine in the morning about gears."
    intent = called(line)
    assert intent is not None and intent.name == "desk.ring_back"
    when = intent.arguments["when"]
    assert when == "on Thursday at nine in the morning"
    due = resolve_due(when, NOW, "Europe/Lisbon")
    assert (due.at.date(), due.at.hour, due.at.minute) == (dt.date(2026, 12, 10), 9, 0)


def test_a_write_said_with_all_its_values_outweighs_the_read_sharing_its_identifier() -> None:
    # Was the plan's look-up: "for two months" filled no count (a duration is no quantity).
    line = "I'd like to put my service plan on hold from the first of March for two months. "
    intent = called(line + "It's SC40721.")
    assert intent == ToolIntent(
        name="service_plan.suspend",
        arguments={"rider_no": "SC40721", "starting": "2027-03-01", "months": 2},
    )
    intent = called("Please suspend service plan SC40721 from the 4th of January for 3 months.")
    assert intent is not None and intent.arguments["months"] == 3


def test_the_verb_of_a_writes_description_and_examples_names_it() -> None:
    # Was the plan's look-up: "hibernate" is no word of the tool's name.
    line = "I need to hibernate my plan, it's SC40721."
    request = LlmRequest(messages=[SYSTEM, Message(role="user", content=line)], tools=TOOLS)
    decision = dialogue.decide(request, today=TODAY, model=model())
    assert isinstance(decision, dialogue.Say)  # the start date is asked, nothing looked up
    assert called("Is my service plan SC40721 still running?") == ToolIntent(
        name="service_plan.lookup", arguments={"rider_no": "SC40721"}
    )


def test_a_bare_field_its_tools_line_calls_a_date_takes_the_date_said() -> None:
    # Was left to the small model, which asked "What visit day should I use?".
    assert called("Are there any large bays free on Saturday the 12th of December?") == (
        ToolIntent(
            name="workshop.open_bays", arguments={"visit_day": "2026-12-12", "bay_size": "large"}
        )
    )


def test_a_thing_described_in_the_line_fills_its_bare_field_on_the_weekday_said() -> None:
    # Was left to the small model ("What thing should I use?"), and "Friday the 4th of
    # December" said on the 7th was next year's 4th (a Saturday).
    line = "I think I left my red bike pump in the yard on Friday the 4th of December. Report it?"
    assert called(line) == ToolIntent(
        name="found_items.report",
        arguments={"thing": "red bike pump", "spot": "yard", "left_on": "2026-12-04"},
    )
