"""Lines of the blind ferry suite (Gannet, tuning split), served on a profile in another
business: a coach operator no suite uses (issue 42).

Sans-IO, as :mod:`tests.inference.test_blind_leisure_dialogue`. Each test fails on the code
before it: a route its tool's line lists as "Ashby-Hinckley" was not heard in "from Ashby over
to Hinckley"; "an upper seat" did not pick "upper deck" beside "lower deck"; "bring a bike on
booking ..." looked the booking up; a state the tool reports ("whether the coach is running or
delayed") was taken for the values of its input; "(the Ashby or Hinckley coach station)" kept
its noun on the last name; a model value holding another field's value beside words of its own
was thrown away.
"""

from __future__ import annotations

import datetime as dt
from functools import cache

from tests.support.tools import tool as _tool
from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import LlmRequest, Message, ToolIntent
from vocero.inference.dialogue import intents, router, schema, small_talk
from vocero.inference.dialogue import manager as dialogue

TODAY = dt.date(2026, 12, 7)
SYSTEM = Message(role="system", content="You answer the phone for Ridgeway Coaches.")
TRIP = {"type": "string", "pattern": "^RC[0-9]{5}$", "description": "The trip reference"}


TIMETABLE = _tool(
    "timetable.coaches",
    "The coaches on a route on one day; route is Ashby-Hinckley, Hinckley-Ashby or "
    "Market-Bosworth.",
    {"route": {"type": "string"}, "day": {"type": "string", "format": "date"}},
)
SEAT = _tool(
    "trip.add_seat",
    "Add a seat to a trip; seat is the deck: upper deck, lower deck or front row.",
    {"trip_ref": TRIP, "seat": {"type": "string"}},
)
BIKE = _tool(
    "trip.add_bike", "Add a bicycle to a trip.", {"trip_ref": TRIP, "bikes": {"type": "integer"}}
)
FIND = _tool(
    "trip.find",
    "Find a trip by its reference: route, departure, seats and bikes.",
    {"trip_ref": TRIP},
    examples=["Can you look up my trip RC10001?"],
)
RUNNING = _tool(
    "coach.today", "Whether today's coach is running or delayed by roadworks.", {"coach": {}}
)
PICKUP = _tool(
    "trip.pickup",
    "Change where a trip picks up (the Ashby or Hinckley coach station).",
    {"trip_ref": TRIP, "stop": {"type": "string"}},
)
TOOLS = [TIMETABLE, SEAT, BIKE, FIND, RUNNING, PICKUP]


@cache
def model() -> dialogue._Memo:
    return dialogue._Memo(intents.IntentModel.fit(TOOLS, []))


def decided(line: str) -> dialogue.Decision:
    request = LlmRequest(messages=[SYSTEM, Message(role="user", content=line)], tools=TOOLS)
    return dialogue.decide(request, today=TODAY, model=model())


def options(tool: ToolDefinition, name: str) -> object:
    return schema.model_facing(tool)["properties"][name].get(schema.OPTIONS_KEY)


def test_a_route_is_heard_as_its_places_in_its_order() -> None:
    assert decided(
        "What coaches are there from Ashby over to Hinckley on the 15th of January?"
    ) == (
        dialogue.Call(
            ToolIntent(
                name="timetable.coaches", arguments={"route": "Ashby-Hinckley", "day": "2027-01-15"}
            )
        )
    )
    said = decided("any coaches from hinckley to ashby tomorrow")
    assert isinstance(said, dialogue.Call) and said.intent.arguments["route"] == "Hinckley-Ashby"


def test_a_listed_value_is_picked_by_the_word_only_it_has() -> None:
    assert options(SEAT, "seat") == ["upper deck", "lower deck", "front row"]
    line = "Can I add a lower seat to RC10002? Sorry, no, an upper seat, for the view."
    assert decided(line) == dialogue.Call(
        ToolIntent(name="trip.add_seat", arguments={"trip_ref": "RC10002", "seat": "upper deck"})
    )


def test_bringing_something_on_a_booking_adds_it_rather_than_looking_it_up() -> None:
    said = decided("I'd like to bring a bicycle on trip RC10003.")
    assert isinstance(said, dialogue.Say), said  # how many bikes is asked; nothing looked up


def test_a_state_the_tool_reports_is_no_value_of_its_input() -> None:
    assert options(RUNNING, "coach") is None


def test_names_listed_before_their_common_noun_are_the_names() -> None:
    assert options(PICKUP, "stop") == ["Ashby", "Hinckley"]


def test_a_longer_goodbye_after_thanks_ends_the_call() -> None:
    assert small_talk.act("That's all I needed really. Thanks very much, bye now.") == "goodbye"


def test_a_model_value_with_words_of_its_own_beside_another_fields_value_stands() -> None:
    said = LlmRequest(
        messages=[Message(role="user", content="Can a fitter replace my gas meter? Account 4002.")]
    )
    value = {"account": "4002", "item": "gas meter, account 4002"}
    assert dialogue.unsaid(said, value, ["item"]) == ()
    assert dialogue.unsaid(said, {"account": "4002", "item": "4002"}, ["item"]) == ("item",)


def test_a_field_named_for_a_thing_takes_the_callers_words_around_that_name() -> None:
    """Gannet: the small model wrote "Sailing" into ``sailing``; the caller had said which one."""
    status = _tool("coach.status", "Is a coach running today.", {"coach": {"type": "string"}})
    arguments, _, model_fill = router.fill_arguments(
        status, "Is the twenty past eight coach from Market Bosworth on time today?", TODAY
    )
    assert arguments == {"coach": "twenty past eight coach from Market Bosworth"}
    assert model_fill == []
    assert router.fill_arguments(status, "Is the coach on time?", TODAY)[2] == ["coach"]
    said = LlmRequest(messages=[Message(role="user", content="Is the coach on time?")])
    assert dialogue.unsaid(said, {"coach": "Coach"}, ["coach"]) == ("coach",)
