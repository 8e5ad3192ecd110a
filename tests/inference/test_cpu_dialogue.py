"""The CPU dialogue manager decides each turn from the request alone (issue 28).

Sans-IO: :func:`vocero.inference.dialogue.manager.decide` is called as the runner calls it, on a
profile whose tool, argument and claim names the code has never seen (a vet clinic), so nothing
here can pass by knowing the demo's names.
"""

from __future__ import annotations

import datetime as dt
from functools import cache

import anyio
import pytest

from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import ClaimTopic, LlmRequest, Message, ToolIntent
from vocero.inference.dialogue import cues, intents, questions, tool_choice
from vocero.inference.dialogue import manager as dialogue

SYSTEM = Message(
    role="system",
    content="You are the phone assistant of Harbor Vet. You help callers with their pets' visits.",
)
TODAY = dt.date(2026, 12, 2)
VISITS_FIND = ToolDefinition(
    name="visits.find",
    description="Look up one of the caller's vet visits by its visit reference.",
    input_schema={
        "type": "object",
        "properties": {"visit_ref": {"type": "string", "pattern": "^VX-[0-9]{4}$"}},
        "required": ["visit_ref"],
    },
)
VISITS_MOVE = ToolDefinition(
    name="visits.move",
    description="Move one of the caller's vet visits to another day and time.",
    input_schema={
        "type": "object",
        "properties": {
            "visit_ref": {"type": "string", "pattern": "^VX-[0-9]{4}$"},
            "visit_day": {"type": "string", "format": "date"},
            "visit_time": {"type": "string", "format": "time"},
        },
        "required": ["visit_ref", "visit_day", "visit_time"],
    },
)
FAQ = ToolDefinition(
    name="faq.lookup",
    builtin="knowledge.search",
    description="Find the clinic's approved answers.",
    input_schema={"type": "object", "properties": {"query": {"type": "string"}}},
)
CALLBACKS = ToolDefinition(
    name="callbacks.arrange",
    builtin="followups.record",
    description="Arrange for the clinic to call the caller back.",
    input_schema={
        "type": "object",
        "properties": {"when": {"type": "string"}, "reason": {"type": "string"}},
        "required": ["when", "reason"],
    },
)
TOOLS = [VISITS_FIND, VISITS_MOVE, FAQ, CALLBACKS]
CLAIMS = [
    ClaimTopic(key="clinic.hours", text="The clinic is open from 8 AM to 7 PM, Monday to Saturday.",
               topics=["opening hours", "open", "saturday", "times"]),
    ClaimTopic(key="vaccines.boosters", text="Boosters are given within 4 weeks of the first dose.",
               topics=["vaccination", "booster", "vaccine", "shots"]),
    ClaimTopic(key="visits.injured",
               text="If your pet is injured, bring it in at once: emergencies are seen first.",
               topics=["injured", "hurt", "emergency", "bleeding", "accident"]),
]  # fmt: skip


@cache
def model() -> dialogue._Memo:
    return dialogue._Memo(intents.IntentModel.fit(TOOLS, CLAIMS))


def request(*lines: str | Message, **kwargs: object) -> LlmRequest:
    messages = [SYSTEM] + [
        m if isinstance(m, Message) else Message(role="user", content=m) for m in lines
    ]
    return LlmRequest(messages=messages, tools=TOOLS, claims=CLAIMS, **kwargs)  # type: ignore[arg-type]


def agent(text: str) -> Message:
    return Message(role="assistant", content=text)


def decide(*lines: str | Message, **kwargs: object) -> dialogue.Decision:
    return dialogue.decide(request(*lines, **kwargs), today=TODAY, model=model())


def test_a_greeting_with_a_question_is_the_question() -> None:
    decision = decide("Hi, what time do you open on Saturday?")
    assert decision == dialogue.Call(
        ToolIntent(name="faq.lookup", arguments={"query": "what time do you open on Saturday?"})
    ), "the catalog search, under the profile's own name for it"


def test_what_can_i_do_about_a_problem_asks_the_catalog() -> None:
    decision = decide("My dog got hurt in an accident, what can I do?")
    assert isinstance(decision, dialogue.Call) and decision.intent.name == "faq.lookup"
    plain = decide("What can you do?")
    assert isinstance(plain, dialogue.Say)
    assert "pets' visits" in plain.text or "visits" in plain.text
    assert "call back" in plain.text, "the call-back built-in is offered, whatever its name"


def test_out_of_scope_is_said_and_nothing_is_called() -> None:
    for line in ("Please close my account", "Tell me a joke", "What's the weather tomorrow?"):
        decision = decide(line)
        assert isinstance(decision, dialogue.Say), (line, decision)
        assert decision.text.startswith("Sorry, I can't help with that here."), line


WAIVER = ToolDefinition(
    name="fees.waive", description="Waive the fee for a missed visit.", input_schema={}
)  # a prohibited tool: never offered, sent as ``refused`` material only


@cache
def refusing() -> dialogue._Memo:
    return dialogue._Memo(intents.IntentModel.fit(TOOLS, CLAIMS, [WAIVER]))


def test_what_only_a_prohibited_tool_does_is_refused_and_nothing_is_called() -> None:
    for line in ("Please waive the fee for visit VX-2041", "can you waive my missed visit fee"):
        control = decide(line)  # without the profile's prohibited tool: a lookup or a question
        assert not isinstance(control, dialogue.Say) or not control.text.startswith("Sorry")
        decision = dialogue.decide(request(line, refused=[WAIVER]), today=TODAY, model=refusing())
        assert isinstance(decision, dialogue.Say), (line, decision)
        assert decision.text.startswith("Sorry, I can't help with that here."), line
    assert isinstance(decide("Please waive the fee for visit VX-2041"), dialogue.Call)
    moved = dialogue.decide(request("Can you move my visit VX-2041?", refused=[WAIVER]),
                            today=TODAY, model=refusing())
    assert moved == dialogue.Say("What day would you like?"), "an allowed request still is one"


def test_a_pure_act_is_answered_by_the_rules() -> None:
    said = {line: decide(line) for line in ("Hello", "thanks a lot", "bye", "say that again")}
    texts = {k: v.text for k, v in said.items() if isinstance(v, dialogue.Say)}
    assert texts["Hello"].startswith("Hello, this is the phone assistant of Harbor Vet.")
    assert texts["thanks a lot"].startswith("You're welcome.")
    assert texts["bye"] == "Thank you for calling. Goodbye."
    assert texts["say that again"] == "Sorry, I have not said anything yet."


def test_a_declined_task_is_dropped_and_acknowledged() -> None:
    opened = ["Can you move my visit VX-2041?"]
    question = decide(*opened)
    assert isinstance(question, dialogue.Say) and "day" in question.text.lower()
    dropped = decide(*opened, agent(question.text), "no, forget it")
    assert isinstance(dropped, dialogue.Say) and "left everything as it was" in dropped.text
    later = decide(*opened, agent(question.text), "no, forget it", agent(dropped.text),
                   "Friday at 3 pm")
    assert not (isinstance(later, dialogue.Call) and later.intent.name == "visits.move"), (
        "a dropped task stays dropped"
    )


def test_the_callers_today_is_in_their_timezone() -> None:
    # 2026-12-02 23:30 UTC is already Thursday December 3 in Auckland (UTC+13).
    instant = dt.datetime(2026, 12, 2, 23, 30, tzinfo=dt.UTC).timestamp()
    late = request("hi", timezone="Pacific/Auckland", now=instant)
    assert dialogue.clock(late).date() == dt.date(2026, 12, 3)
    assert dialogue.clock(request("hi", timezone="America/Chicago", now=instant)).date() == TODAY
    assert dialogue.clock(request("hi", timezone="Not/AZone", now=instant)).date() == TODAY


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Is my pet's visit VX-2041 still on?", "visits.find"),
        ("I need to push back the check-up VX-2041 to Friday at 3 pm", "visits.move"),
    ],
)
def test_a_tool_the_rules_do_not_know_is_routed_by_its_description(
    line: str, expected: str
) -> None:
    decision = decide(line)
    assert isinstance(decision, dialogue.Call), decision
    assert decision.intent.name == expected
    assert decision.intent.arguments["visit_ref"] == "VX-2041"


def test_a_question_in_the_catalogs_own_words_asks_the_catalog() -> None:
    """"Injured" is only the catalog's word; "visit" is a tool's. A question about the caller's
    own visit is the tool's, whatever else it says."""
    catalog = cues.CatalogCues.of(TOOLS, CLAIMS)
    assert catalog.asks_catalog("My dog is injured, what do I do?")
    assert not catalog.asks_catalog("My dog is injured.")  # not a question
    assert not catalog.asks_catalog("Can you move my visit, my dog is injured?")
    assert ("visit",) not in catalog.topics and ("saturday",) not in catalog.topics
    decision = decide("Is there anything for an injured cat, who do I ask?")
    assert isinstance(decision, dialogue.Call) and decision.intent.name == "faq.lookup"


def test_an_identifier_names_the_tools_that_take_it() -> None:
    assert cues.identified_tools("it is V X two zero four one", TOOLS) == [VISITS_FIND, VISITS_MOVE]
    assert cues.identified_tools("it is at two", TOOLS) == []
    decision = decide("what's under V X two zero four one")
    assert decision == dialogue.Call(ToolIntent(name="visits.find",
                                                arguments={"visit_ref": "VX-2041"}))


def test_a_call_back_asked_for_is_one_whatever_topic_it_is_about() -> None:
    """"Someone" may be a contact topic of the catalog: a call-back asked for is still one."""
    claims = [*CLAIMS, ClaimTopic(key="contact.person", text="Call 555-0142 to talk to us.",
                                  topics=["someone", "person", "front desk"])]
    request = LlmRequest(
        messages=[SYSTEM, Message(role="user",
                                  content="Can someone call me back about my dog's injury?")],
        tools=TOOLS, claims=claims,
    )
    decision = dialogue.decide(request, today=TODAY, model=model())
    assert decision == dialogue.Say("When should we call you back?"), decision


def test_a_missing_field_is_asked_for_by_what_it_names() -> None:
    track = ToolDefinition(
        name="prescriptions.track", description="Where a prescription refill is.",
        input_schema={"type": "object",
                      "properties": {"rx_code": {"type": "string", "pattern": "^RX[0-9]{2,4}$"}},
                      "required": ["rx_code"]},
    )
    book = ToolDefinition(
        name="visits.book", description="Book a visit.",
        input_schema={"type": "object", "properties": {
            "starts_at": {"type": "string", "format": "date-time"},
            "slot": {"type": "string", "enum": ["morning", "afternoon"]},
            "why": {"type": "string"}}},
    )
    assert questions.ask(track, "rx_code") == (
        "Which prescription is it? Please tell me the prescription code.")
    assert questions.ask(VISITS_FIND, "visit_ref") == (
        "Which visit is it? Please tell me the visit reference.")
    assert questions.ask(book, "starts_at") == "What day and time would suit you?"
    assert questions.ask(book, "slot") == "Would you like morning or afternoon?"
    assert questions.ask(book, "why") == "What is the reason?"
    asked = decide("Can you move my visit to Friday at 3 pm?")
    assert asked == dialogue.Say("Which visit is it? Please tell me the visit reference.")


@pytest.mark.anyio
async def test_a_tool_set_is_fitted_once_however_many_ask_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fits: list[int] = []
    real = intents.IntentModel.fit

    def counted(tools, claims=(), refused=()):  # type: ignore[no-untyped-def]
        fits.append(len(tools))
        return real(tools, claims, refused)

    monkeypatch.setattr(intents.IntentModel, "fit", staticmethod(counted))
    models = dialogue.IntentModels()
    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(models.model, TOOLS, CLAIMS)
    assert fits == [len(TOOLS)]
    assert models.fitted(TOOLS, CLAIMS) is await models.model(TOOLS, CLAIMS)
    assert models.fitted(TOOLS[:1], CLAIMS) is None
    assert models.fitted(TOOLS, CLAIMS, [WAIVER]) is None, "what it refuses is in the key"


def test_a_misheard_identifier_is_the_callers_record_one_edit_away() -> None:
    """Whisper prints Piper's "A P T one thousand two" as "APT-10002"; the caller's records,
    listed earlier in the call, hold APT-1002: that is the one proposed and read back."""
    cancel = ToolDefinition(
        name="bookings.cancel", description="Cancel one of the caller's bookings.",
        input_schema={"type": "object", "properties": {
            "booking_id": {"type": "string", "pattern": "^APT-[0-9]{1,8}$"}},
            "required": ["booking_id"]},
    )
    listed = Message(role="tool", content="", tool_name="bookings.list", tool_status="committed",
                     tool_result={"bookings": [{"booking_id": "APT-1001"},
                                               {"booking_id": "APT-1002"}]})
    tools = [*TOOLS, cancel]

    def said(line: str, *history: Message) -> dialogue.Decision:
        messages = [SYSTEM, *history, Message(role="user", content=line)]
        request = LlmRequest(messages=messages, tools=tools, claims=CLAIMS)
        return dialogue.decide(request, today=TODAY)

    assert said("Cancel booking APT-10002", listed) == dialogue.Call(
        ToolIntent(name="bookings.cancel", arguments={"booking_id": "APT-1002"}))
    assert said("Cancel booking APT-101", listed) == dialogue.Call(
        ToolIntent(name="bookings.cancel", arguments={"booking_id": "APT-1001"}))
    assert said("Cancel booking APT-7777", listed) == dialogue.Call(
        ToolIntent(name="bookings.cancel", arguments={"booking_id": "APT-7777"})), "far: as heard"
    assert said("Cancel booking APT-10002") == dialogue.Call(
        ToolIntent(name="bookings.cancel", arguments={"booking_id": "APT-10002"})), "none shown"
    # letters one edit off and a zero too many: a garble the rules cannot read as an identifier
    assert said("Cancel booking AT-T-10002", listed) == dialogue.Call(
        ToolIntent(name="bookings.cancel", arguments={"booking_id": "APT-1002"}))
    # other digits are never changed: 1012 is not guessed to be 1002 (or 1001)
    assert said("Cancel booking APT-1012", listed) == dialogue.Call(
        ToolIntent(name="bookings.cancel", arguments={"booking_id": "APT-1012"}))


def test_a_line_is_respelled_only_where_a_record_is_near() -> None:
    from vocero.inference.dialogue import known

    order = ToolDefinition(
        name="orders.status", description="Look up one order.",
        input_schema={"type": "object", "properties": {"order_id": {"type": "string"}},
                      "required": ["order_id"]})
    shown = Message(role="tool", content="", tool_name="orders.status", tool_status="committed",
                    tool_result={"order_id": "A124", "status": "shipped"})

    def respelt(line: str) -> str:
        request = LlmRequest(messages=[shown, Message(role="user", content=line)], tools=[order])
        return known.respelled(request).messages[-1].content

    assert respelt("and what about A125?") == "and what about A125?", "another order"
    assert respelt("is AA-124 shipped") == "is A124 shipped"
    assert respelt("I want 10 items at 4pm") == "I want 10 items at 4pm"
    assert respelt("where is A0124") == "where is A124"


CALL_OFF = ToolDefinition(
    name="visits.call_off",
    description="Call off one of the caller's pet visits, with their reason. It cannot be undone.",
    input_schema={
        "type": "object",
        "properties": {
            "visit_ref": {"type": "string", "pattern": "^VX-[0-9]{4}$"},
            "why": {"type": "string"},
        },
        "required": ["visit_ref", "why"],
    },
)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # Whisper's spelling of "what's booked under V X two zero four one": a lookup.
        ("What's booked under VX-2041?", "visits.find"),
        ("which pet is VX-2041 for", "visits.find"),
        # Not a wh-question: the model's tool stands (the rules route changes said in words).
        ("I don't need VX-2041 any more, Miso is better", "visits.call_off"),
    ],
)
def test_a_question_about_a_record_is_a_lookup_never_a_change(line: str, expected: str) -> None:
    """When the intent model would open a change the line gives no values for, a wh-question
    about the record goes to the tool that answers from the identifier alone."""
    tools = [VISITS_FIND, VISITS_MOVE, CALL_OFF, FAQ, CALLBACKS]
    picked = tool_choice.looked_up(line, CALL_OFF, tools, TODAY, None)
    assert picked.name == expected
    assert tool_choice.looked_up(line, VISITS_FIND, tools, TODAY, None) is VISITS_FIND
