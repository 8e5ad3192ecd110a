"""Issue 42 ("Yes, book it." was asked again): during a read-back, a yes that restates the pending
action's own verb and object is consent on the CPU dialogue runner, decided by the consent rule
before any model; a yes that goes on with a value, a name or another action's verb is not. The
tools are generic (no suite's names); the engine answers every question with one fixed label,
so what comes out is the rule's, not the model's."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import IntentClassified, LlmRequest, Message, ToolIntent
from vocero.inference.toolkit.llm import RoutedLlm
from vocero.inference.toolkit.settings import QueueSettings

TODAY = dt.date(2026, 12, 2)
SLOT = {"type": "string"}
TOOLS = [
    ToolDefinition(
        name="tables.hold", description="Hold a table for the guest at a time.",
        input_schema={"type": "object", "properties": {"when": SLOT, "party": {"type": "integer"}},
                      "required": ["when", "party"]},
    ),
    ToolDefinition(
        name="tables.drop", description="Drop one held table.",
        input_schema={"type": "object", "properties": {"ref": {"type": "string"}},
                      "required": ["ref"]},
    ),
]  # fmt: skip
PENDING = ToolIntent(name="tables.hold", arguments={"when": "Thursday at 7 PM", "party": 4})
READBACK = "To confirm: hold a table for 4 on Thursday at 7 PM. Shall I go ahead?"


class OneLabelEngine:
    """Answers every structured request with ``label``; never chats."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.asked = 0

    def load(self) -> None:
        return None

    def json_object(
        self, messages: list[dict[str, str]], shape: dict[str, Any], *, max_tokens: int = 160
    ) -> dict[str, Any]:
        self.asked += 1
        return {"intent": self.label}

    def chat_stream(self, messages: list[dict[str, str]], *, max_tokens: int) -> Iterator[str]:
        raise AssertionError("classification never chats")


def label(line: str, model_says: str = "reject", pending: ToolIntent = PENDING) -> str:
    llm = RoutedLlm(OneLabelEngine(model_says), QueueSettings(), today=lambda: TODAY)  # type: ignore[arg-type]
    request = LlmRequest(
        messages=[Message(role="system", content="You hold tables for guests."),
                  Message(role="user", content="Hold a table for 4 on Thursday at 7 pm"),
                  Message(role="assistant", content=READBACK),
                  Message(role="user", content=line)],
        tools=TOOLS, mode="classify_confirmation", pending=pending,
    )  # fmt: skip

    async def classify() -> str:
        outputs = [o async for o in llm.generate(request)]
        [found] = [o.intent for o in outputs if isinstance(o, IntentClassified)]
        return found

    return anyio.run(classify)


@pytest.mark.parametrize("line", [
    "Yes, hold it.", "yes, go ahead and hold it for me", "Yeah, hold the table please.",
    "hold it, yes", "yes please, hold that",
])  # fmt: skip
def test_a_yes_restating_the_pending_action_confirms_whatever_the_model_says(line: str) -> None:
    assert label(line, model_says="reject") == "confirm"
    assert label(line, model_says="uncertain") == "confirm"


@pytest.mark.parametrize(("line", "not_taken"), [
    ("yes, hold it for Friday", "confirm"), ("yes hold it at 8", "confirm"),
    ("yes, hold it for Priya", "confirm"), ("yes, drop it", "confirm"),
    ("hold it", "confirm"), ("yes, don't hold it", "confirm"),
])  # fmt: skip
def test_a_yes_that_goes_on_or_another_verb_never_confirms(line: str, not_taken: str) -> None:
    assert label(line, model_says="confirm") != not_taken


AREA = ToolIntent(name="tables.hold", arguments={"when": "Thursday at 7 PM", "party": 4,
                                                 "area": "terrace"})  # fmt: skip


@pytest.mark.parametrize("line", ["Yes, the terrace. Go ahead.", "yes the terrace please"])
def test_a_yes_saying_a_value_the_read_back_already_holds_confirms(line: str) -> None:
    """Was asked again ("Yes, the van. Go ahead." in the Gannet suite): the value said is the
    one the caller heard read back, so nothing but that proposal can be meant."""
    assert label(line, model_says="uncertain", pending=AREA) == "confirm"
    assert label(line, model_says="uncertain") != "confirm"  # no terrace in what waits


@pytest.mark.parametrize("line", ["Yes, the garden. Go ahead.", "yes the terrace at 8"])
def test_a_yes_saying_another_value_or_a_number_does_not(line: str) -> None:
    assert label(line, model_says="confirm", pending=AREA) != "confirm"


ROOM = ToolIntent(name="rooms.reserve", arguments={"room": "ridge", "minutes": 90})


@pytest.mark.parametrize("line", ["Yes, please book it.", "yes, schedule it", "Yes, reserve it."])
def test_a_yes_with_a_verb_that_says_the_same_action_confirms(line: str) -> None:
    """Was asked again (Quarry Hill: "Yes, please book it." to a ``rooms.reserve`` read back as
    "book study room ..."): book, reserve and schedule say one action in everyday English."""
    assert label(line, model_says="uncertain", pending=ROOM) == "confirm"


@pytest.mark.parametrize("line", ["yes, cancel it", "yes, book it for Friday", "yes, move it"])
def test_a_yes_with_another_action_or_a_value_beside_the_same_verb_does_not(line: str) -> None:
    assert label(line, model_says="confirm", pending=ROOM) != "confirm"


@pytest.mark.parametrize("line", ["Yes, grand.", "Grand, yes, go ahead.", "That's grand."])
def test_an_irish_english_yes_confirms(line: str) -> None:
    """Beacon (en-IE): "Yes, grand." was asked again; "grand" says fine, as "great" does."""
    assert label(line, model_says="uncertain") == "confirm"


def test_grand_beside_a_value_is_still_no_yes() -> None:
    assert label("grand, Friday at 8", model_says="confirm") != "confirm"


@pytest.mark.parametrize(
    "line",
    ["Yes, that's all good, go ahead.", "All good.", "Yep, all good thanks.", "Sweet as.",
     "Yes, go on then.", "Go on then.", "Yes, please do."],
)  # fmt: skip
def test_an_all_good_yes_confirms(line: str) -> None:
    """Tamarind (en-NZ): "Yes, that's all good, go ahead." was "Sorry, I didn't catch that";
    Juniper (en-GB): "Yes, go on then." opened another request; "Yes, please do." was read as
    "yes please" and a stray "do" (the phrases overlap)."""
    assert label(line, model_says="uncertain") == "confirm"


@pytest.mark.parametrize(
    "line",
    ["all good, Friday at 8", "not all good", "all good?", "go on, make it Friday", "yes do"],
)
def test_all_good_beside_a_value_a_no_or_a_question_is_no_yes(line: str) -> None:
    assert label(line, model_says="confirm") != "confirm"
