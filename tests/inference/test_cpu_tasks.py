"""The embedded agent keeps a task across turns, and tells answers from new requests.

The CPU runner is driven exactly as the orchestrator drives it: each request carries the
conversation as heard (caller turns, assistant text, tool results) and, while a proposal is being
confirmed, the proposal itself (``pending``).
"""

from __future__ import annotations

from contextlib import aclosing
from typing import Any

import pytest

from tests.inference import corpus
from vocero.contracts import values
from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import (
    IntentClassified,
    LlmOutput,
    LlmRequest,
    Message,
    TextChunk,
    ToolIntent,
)
from vocero.inference.toolkit.llm import RoutedLlm

pytestmark = [pytest.mark.model, pytest.mark.anyio]
SYSTEM = Message(role="system", content="You are the phone assistant of Acme. Be brief.")
FRIDAY = values.date_in("Friday", corpus.reference_date())
APPOINTMENTS = {
    "appointments": [
        {"appointment_id": "APT-1001", "date": "2026-12-03", "time": "10:00",
         "timezone": "Europe/Madrid", "service": "Boiler inspection", "status": "scheduled",
         "version": 1},
        {"appointment_id": "APT-1002", "date": "2026-12-10", "time": "16:30",
         "timezone": "Europe/Madrid", "service": "Window repair", "status": "scheduled",
         "version": 1},
    ]
}


def user(text: str) -> Message:
    return Message(role="user", content=text)


def agent(text: str) -> Message:
    return Message(role="assistant", content=text)


def listed(result: dict[str, Any]) -> Message:
    return Message(role="tool", content="", tool_name="appointments.list", tool_result=result,
                   tool_status="committed")


async def run(llm: RoutedLlm, *messages: Message, **kwargs: Any) -> list[LlmOutput]:
    request = LlmRequest(messages=[SYSTEM, *messages], tools=corpus.demo_tools(), **kwargs)
    async with aclosing(llm.generate(request)) as outputs:
        return [o async for o in outputs]


def said(outputs: list[LlmOutput]) -> str:
    return "".join(o.text for o in outputs if isinstance(o, TextChunk))


async def test_my_appointment_is_resolved_by_listing_them(routed_llm: RoutedLlm) -> None:
    first = [user("Move my appointment to Friday")]
    step = await run(routed_llm, *first)
    assert step == [ToolIntent(name="appointments.list", arguments={})]
    two = await run(routed_llm, *first, listed(APPOINTMENTS))
    question = said(two)
    assert question.startswith("Which appointment:")
    assert "boiler inspection on Thursday, December 3" in question
    assert "window repair on Thursday, December 10" in question
    assert "APT-" not in question, "the caller did not use ids: they are not read out"
    history = [*first, listed(APPOINTMENTS), agent(question)]
    time_asked = await run(routed_llm, *history, user("The boiler inspection"))
    assert said(time_asked) == "What time would suit you?", "one question at a time"
    history += [user("The boiler inspection"), agent(said(time_asked))]
    done = await run(routed_llm, *history, user("At 3 pm please"))
    assert done == [ToolIntent(name="appointments.reschedule", arguments={
        "appointment_id": "APT-1001", "new_date": FRIDAY, "new_time": "15:00"})]


async def test_one_appointment_is_taken_without_asking(routed_llm: RoutedLlm) -> None:
    only = {"appointments": APPOINTMENTS["appointments"][:1]}
    outputs = await run(routed_llm, user("Cancel my appointment"), listed(only))
    assert outputs == [ToolIntent(name="appointments.cancel",
                                  arguments={"appointment_id": "APT-1001"})]


async def test_a_correction_during_the_read_back_changes_the_proposal(
    routed_llm: RoutedLlm,
) -> None:
    pending = ToolIntent(name="appointments.reschedule", arguments={
        "appointment_id": "APT-1001", "new_date": "2026-12-06", "new_time": "15:00",
        "timezone": "Europe/Madrid"})
    history = [user("move APT-1001 to Sunday at 3 pm"),
               agent("To confirm: reschedule appointment APT-1001 to Sunday, December 6")]
    correction = user("no wait, move it to Friday")
    classified = await run(routed_llm, *history, correction, mode="classify_confirmation",
                           pending=pending)
    assert classified == [IntentClassified(intent="new_request")]
    outputs = await run(routed_llm, *history, correction, pending=pending)
    assert outputs == [ToolIntent(name="appointments.reschedule", arguments={
        **pending.arguments, "new_date": FRIDAY})]


@pytest.mark.parametrize(("answer", "intent"), [
    ("yes", "confirm"),
    ("yes please", "confirm"),
    ("no", "reject"),
    ("no, thanks", "reject"),
    ("I think so", "uncertain"),
    ("Can I return an opened item?", "new_request"),
    ("Call me back tomorrow at 4pm about my invoice", "new_request"),
    ("thanks, bye", "new_request"),
    ("yes, but make it 5 pm", "new_request"),
])
async def test_answers_are_told_from_new_requests(
    routed_llm: RoutedLlm, answer: str, intent: str
) -> None:
    pending = ToolIntent(name="appointments.reschedule", arguments={
        "appointment_id": "APT-1001", "new_date": "2026-12-04", "new_time": "15:00"})
    outputs = await run(routed_llm, user(answer), mode="classify_confirmation", pending=pending)
    assert outputs == [IntentClassified(intent=intent)]  # type: ignore[arg-type]


async def test_a_bare_yes_with_nothing_pending_asks_what_they_would_like(
    routed_llm: RoutedLlm,
) -> None:
    outputs = await run(routed_llm, agent("Hello, this is Acme."), user("yes"))
    assert said(outputs) == "What would you like me to do?"


async def test_a_yes_to_the_agents_offered_time_books_it(routed_llm: RoutedLlm) -> None:
    refused = Message(role="tool", content="", tool_name="followups.record",
                      tool_result={"recorded": False, "status": "NOT recorded",
                                   "reason": "when_mismatch"}, tool_status="rejected")
    outputs = await run(
        routed_llm,
        user("please call me back sometime about my invoice"),
        refused,
        agent("Shall we call you tomorrow at 4 pm?"),
        user("yes"),
    )
    assert outputs == [ToolIntent(name="followups.record", arguments={
        "when": "tomorrow at 4 pm", "reason": "my invoice", "channel": "phone"})]


# ------------------------------------------------------- a question does not trap (issue #25)

ASK_REASON = "What is it about?"
KNOWLEDGE = ToolDefinition(
    name="knowledge.search", builtin="knowledge.search",
    description="Find approved answers about returns and contacts.",
    input_schema={"type": "object", "properties": {"query": {"type": "string"}},
                  "required": ["query"]},
)


async def run_with_knowledge(llm: RoutedLlm, *messages: Message) -> list[LlmOutput]:
    request = LlmRequest(messages=[SYSTEM, *messages], tools=[*corpus.demo_tools(), KNOWLEDGE])
    async with aclosing(llm.generate(request)) as outputs:
        return [o async for o in outputs]


async def test_a_turn_that_does_not_answer_the_question_is_served_as_a_new_request(
    routed_llm: RoutedLlm,
) -> None:
    opened = [user("Can you call me back tomorrow at 4pm?"), agent(ASK_REASON)]
    assert said(await run_with_knowledge(routed_llm, *opened[:1])) == ASK_REASON
    outputs = await run_with_knowledge(routed_llm, *opened, user("Can I return an opened item?"))
    assert outputs == [ToolIntent(name="knowledge.search",
                                  arguments={"query": "Can I return an opened item?"})]
    person = await run_with_knowledge(
        routed_llm, *opened, user("Can I return an opened item?"),
        agent("Opened items can only be returned within 14 days."),
        user("I want to speak to a real person"))
    assert said(person) != ASK_REASON
    assert [o.name for o in person if isinstance(o, ToolIntent)] == ["knowledge.search"]
    # Without a catalog to ask, the new request is still served, not swallowed.
    plain = await run(routed_llm, *opened, user("Can I return an opened item?"))
    assert ASK_REASON not in said(plain) and not any(isinstance(o, ToolIntent) for o in plain)


async def test_the_answer_to_a_free_text_question_is_the_callers_words(
    routed_llm: RoutedLlm,
) -> None:
    for answer in ("My refund.", "It's about my refund."):
        outputs = await run(routed_llm, user("Can you call me back tomorrow at 4pm?"),
                            agent(ASK_REASON), user(answer))
        [intent] = [o for o in outputs if isinstance(o, ToolIntent)]
        assert intent.name == "followups.record"
        assert intent.arguments["reason"].lower() == "my refund"
        assert intent.arguments["when"] == "tomorrow at 4pm"


async def test_one_question_is_asked_at_most_twice(routed_llm: RoutedLlm) -> None:
    start = [user("I'd like to reschedule my appointment APT-1001")]
    question = said(await run(routed_llm, *start))
    assert question == "What day would you like?"
    twice = await run(routed_llm, *start, agent(question), user("hmm, not sure"))
    assert said(twice) == question, "unclear: asked again, once"
    dropped = await run(routed_llm, *start, agent(question), user("hmm, not sure"),
                        agent(question), user("I really don't know"))
    words = said(dropped)
    assert question not in words and words.startswith("Let's leave that for now."), words
    after = await run(routed_llm, *start, agent(question), user("hmm, not sure"),
                      agent(question), user("I really don't know"), agent(words),
                      user("Friday at 3pm"))
    assert not [o for o in after if isinstance(o, ToolIntent)
                and o.name == "appointments.reschedule"], "the dropped task stays dropped"
