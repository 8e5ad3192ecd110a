"""Values a tool's line lists in brackets, questions asked in other words, and junk a model
writes into a free-text field (issue 42).

Sans-IO, on a profile in a business no suite uses (a print shop with a hand-over counter): the
tools' own lines list the values of bare string fields ("(matte lamination, spot varnish or
foil)"); the claims call a price "fee" and an age "age". Each test fails on the code before
it: a listed value went to the small model, which wrote junk or nothing; "how much does it
cost" and "I'm 19" found no claim topic.
"""

from __future__ import annotations

import datetime as dt
from functools import cache

from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import ClaimTopic, LlmRequest, Message, ToolIntent
from vocero.inference.dialogue import intents, questions, router
from vocero.inference.dialogue import manager as dialogue

TODAY = dt.date(2026, 12, 7)
SYSTEM = Message(role="system", content="You answer the phone for Inkwell Print Works.")
JOB = {"type": "string", "pattern": "^PW-[0-9]{4}$", "description": "The job number, like PW-3310"}
FINISH = ToolDefinition(
    name="jobs.add_finish",
    description="Put a finish on a print job (matte lamination, spot varnish, gold foil or an "
    "embossed cover).",
    input_schema={
        "type": "object",
        "properties": {"job": JOB, "finish": {"type": "string"}},
        "required": ["job", "finish"],
    },
    examples=["Can I add a finish to my job?"],
)
HANDOVER = ToolDefinition(
    name="jobs.handover",
    description="Change where and on which day a job is collected; counter is a hand-over "
    "counter (Mill Lane, Quayside or the Old Exchange); note is anything for the packer.",
    input_schema={
        "type": "object",
        "properties": {
            "job": JOB,
            "counter": {"type": "string"},
            "note": {"type": "string"},
            "collect_on": {"type": "string", "format": "date"},
        },
        "required": ["job", "counter", "collect_on"],
    },
)
PAPER = ToolDefinition(
    name="jobs.paper",
    description="Change the paper of a print job (for example recycled or 300 gsm card).",
    input_schema={
        "type": "object",
        "properties": {"job": JOB, "stock": {"type": "string"}},
        "required": ["job", "stock"],
    },
)
KNOWLEDGE = ToolDefinition(
    name="shop.answers",
    builtin="knowledge.search",
    description="Inkwell's approved answers about prices, rush jobs, proofs and cancellations.",
    input_schema={
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    },
)
CANCEL = ToolDefinition(
    name="jobs.cancel",
    description="Cancel a print job before it goes to press.",
    input_schema={"type": "object", "properties": {"job": JOB}, "required": ["job"]},
)
TOOLS = [FINISH, HANDOVER, PAPER, KNOWLEDGE, CANCEL]
CLAIMS = [
    ClaimTopic(
        key="cancel.terms",
        text="A job cancelled before press is free; after press we keep a 20 pound fee.",
        topics=["cancel", "fee", "charge", "refund"],
    ),
    ClaimTopic(
        key="accounts.minors",
        text="Trade accounts are open to anyone over 18.",
        topics=["age", "under 18", "trade account"],
    ),
]


@cache
def model() -> dialogue._Memo:
    return dialogue._Memo(intents.IntentModel.fit(TOOLS, CLAIMS))


def request(*lines: str | Message, pending: ToolIntent | None = None) -> LlmRequest:
    messages = [SYSTEM]
    messages += [m if isinstance(m, Message) else Message(role="user", content=m) for m in lines]
    return LlmRequest(messages=messages, tools=TOOLS, claims=CLAIMS, pending=pending)


def decided(*lines: str | Message, pending: ToolIntent | None = None) -> dialogue.Decision:
    return dialogue.decide(request(*lines, pending=pending), today=TODAY, model=model())


def test_the_only_free_field_takes_a_value_its_tools_line_lists() -> None:
    assert decided("Could you add spot varnish to PW-3310?") == dialogue.Call(
        ToolIntent(name="jobs.add_finish", arguments={"job": "PW-3310", "finish": "spot varnish"})
    )
    # As the line writes it, without its article ("an embossed cover").
    call = decided("I'd like an embossed cover on PW-3310 please.")
    assert isinstance(call, dialogue.Call) and call.intent.arguments["finish"] == "embossed cover"


def test_a_listed_value_not_said_is_asked_with_the_list_never_left_to_the_model() -> None:
    assert decided("Add a glitter coat to PW-3310.") == dialogue.Say(
        "Which finish: matte lamination, spot varnish, gold foil or embossed cover?"
    )


def test_a_list_goes_to_the_field_named_before_it_not_to_another_free_field() -> None:
    arguments, missing, _ = router.fill_arguments(
        HANDOVER, "Move PW-3310 to the Quayside counter on the 9th of December.", TODAY
    )
    assert arguments == {"job": "PW-3310", "counter": "Quayside", "collect_on": "2026-12-09"}
    assert missing == []
    assert questions.ask(HANDOVER, "counter") == (
        "Which counter: Mill Lane, Quayside or Old Exchange?"
    )
    assert "Quayside" not in str(router.fill_arguments(HANDOVER, "Quayside", TODAY)[0].get("note"))


def test_an_open_list_is_no_closed_set_of_values() -> None:
    # "(for example recycled or 300 gsm card)": other papers exist; the model fills it.
    arguments, missing, model_fill = router.fill_arguments(
        PAPER, "Print PW-3310 on linen paper instead.", TODAY
    )
    assert arguments == {"job": "PW-3310"} and missing == [] and model_fill == ["stock"]


def test_a_listed_value_said_during_a_read_back_is_a_correction() -> None:
    pending = ToolIntent(
        name="jobs.handover",
        arguments={"job": "PW-3310", "counter": "Mill Lane", "collect_on": "2026-12-09"},
    )
    lines = (
        "Collect PW-3310 at Mill Lane on the 9th of December.",
        Message(role="assistant", content="To confirm: PW-3310 at Mill Lane on December 9?"),
        "Actually, the Old Exchange.",
    )
    assert dialogue.new_request(request(*lines, pending=pending), lines[-1], TODAY, model=model())
    assert decided(*lines, pending=pending) == dialogue.Call(
        ToolIntent(
            name="jobs.handover",
            arguments={"job": "PW-3310", "counter": "Old Exchange", "collect_on": "2026-12-09"},
        )
    )


def test_how_much_it_costs_during_a_read_back_asks_the_catalog_not_the_question() -> None:
    pending = ToolIntent(name="jobs.cancel", arguments={"job": "PW-3310"})
    lines = (
        "Cancel PW-3310.",
        Message(role="assistant", content="To confirm: cancel PW-3310. Shall I go ahead?"),
        "Hang on, how much does it cost to cancel?",
    )
    said = request(*lines, pending=pending)
    assert dialogue.new_request(said, lines[-1], TODAY, model=model())
    assert decided(*lines, pending=pending) == dialogue.Call(
        ToolIntent(
            name="shop.answers", arguments={"query": "Hang on, how much does it cost to cancel?"}
        )
    )


def test_a_caller_saying_their_age_asks_the_age_topic() -> None:
    call = decided("I'm 17, can I still open a trade account?")
    assert call == dialogue.Call(
        ToolIntent(
            name="shop.answers", arguments={"query": "I'm 17, can I still open a trade account?"}
        )
    )
    # Minutes, money or an hour are no age.
    assert not isinstance(decided("I'm 15 minutes late, can I still collect?"), dialogue.Call)


def test_a_model_value_holding_another_fields_value_or_stuck_on_a_word_is_asked_for() -> None:
    said = request("Can you add a finish to PW-3310?")
    junk = {"job": "PW-3310", "finish": "PW-3310_W-3310_W-3310"}
    assert dialogue.unsaid(said, junk, ["finish"]) == ("finish",)
    said = request("Add a finish to PW-3310, the shiny kind.")
    stuck = {"job": "PW-3310", "finish": "shiny shiny shiny kind"}
    assert dialogue.unsaid(said, stuck, ["finish"]) == ("finish",)
    assert dialogue.unsaid(said, {"job": "PW-3310", "finish": "shiny kind"}, ["finish"]) == ()


def test_a_model_value_that_ran_on_keeps_its_first_sentence() -> None:
    ran_on = {"job": "PW-3310", "finish": "gloss on the cover. the note is gloss. the note is"}
    assert dialogue.trimmed(ran_on, ["finish"]) == {
        "job": "PW-3310",
        "finish": "gloss on the cover",
    }
    fine = {"job": "PW-3310", "finish": "gloss. on the cover"}
    assert dialogue.trimmed(fine, ["finish"]) == fine


def test_a_field_named_only_item_takes_the_thing_the_request_names() -> None:
    """Northwind: the small model wrote the account number into ``item`` ("40021877"), which
    is no thing; now the thing said after "my" is the value, and a clause is none."""
    visit = ToolDefinition(
        name="engineers.book",
        description="Book an engineer visit; slot is the start as an RFC 3339 date-time.",
        input_schema={
            "type": "object",
            "properties": {"job": JOB, "item": {"type": "string"}, "slot": {"type": "string"}},
            "required": ["job", "item", "slot"],
        },
    )
    arguments, _, model_fill = router.fill_arguments(
        visit, "Can someone come to service my guillotine on Friday at 10 am? Job PW-3310.", TODAY
    )
    assert arguments["item"] == "guillotine" and model_fill == []
    arguments, _, model_fill = router.fill_arguments(
        visit, "My guillotine is jammed, job PW-3310, Friday at 10 am.", TODAY
    )
    assert "item" not in arguments and model_fill == ["item"]


def test_a_reason_field_takes_the_reason_the_request_gives() -> None:
    """Harbor: the small model wrote the visit's reference into ``why`` ("VX-2042"); the
    reason the caller gave after a comma or "because" is the value, and none given is asked."""
    scrap = ToolDefinition(
        name="jobs.scrap",
        description="Scrap a print job before it goes to press. It cannot be undone.",
        input_schema={
            "type": "object",
            "properties": {"job": JOB, "why": {"type": "string", "description": "Their reason"}},
            "required": ["job", "why"],
        },
    )
    said = "Please scrap job PW-3310, the client changed the artwork"
    assert router.fill_arguments(scrap, said, TODAY)[0]["why"] == "the client changed the artwork"
    said = "Scrap PW-3310 because we found a typo on the cover"
    assert router.fill_arguments(scrap, said, TODAY)[0]["why"] == "we found a typo on the cover"
    arguments, missing, _ = router.fill_arguments(scrap, "Please scrap job PW-3310, thanks", TODAY)
    assert "why" not in arguments and missing == ["why"]
