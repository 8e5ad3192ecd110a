"""The CPU dialogue manager hands a caller who asks for a person to the profile's handoff tool,
whatever the profile calls it (issue 43 item 6); without the change its "person" act asked
the catalog or said it could not transfer. Sans-IO,
on the vet clinic of ``tests/inference/test_cpu_dialogue.py`` (names no code knows)."""

from __future__ import annotations

from functools import cache

from tests.inference.test_cpu_dialogue import CLAIMS, SYSTEM, TODAY, TOOLS
from vocero.contracts.domain import ToolDefinition
from vocero.contracts.handoff import handoff_tool
from vocero.contracts.ports import LlmRequest, Message
from vocero.inference.dialogue import intents
from vocero.inference.dialogue import manager as dialogue

SPEC = handoff_tool()
FRONT_DESK = ToolDefinition(
    name="clinic.front_desk", builtin="handoff.request", description=SPEC.description,
    input_schema={"type": "object", "properties": {"reason": {"type": "string"}}},
)
LINES = ("I want to talk to a human", "put me through to someone", "Can I speak to a person?")


@cache
def model() -> dialogue._Memo:
    return dialogue._Memo(intents.IntentModel.fit([*TOOLS, FRONT_DESK], CLAIMS))


def decide(line: str) -> dialogue.Decision:
    request = LlmRequest(messages=[SYSTEM, Message(role="user", content=line)],
                         tools=[*TOOLS, FRONT_DESK], claims=CLAIMS)
    return dialogue.decide(request, today=TODAY, model=model())


def test_a_caller_who_asks_for_a_person_is_handed_to_the_profiles_handoff_tool() -> None:
    for line in LINES:
        decision = decide(line)
        assert isinstance(decision, dialogue.Call), (line, decision)
        assert decision.intent.name == "clinic.front_desk", (line, decision)

