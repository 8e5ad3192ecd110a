"""Replies that need no tool, on the CPU runner: the profile's own words, never an invented one."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.inference import corpus
from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import LlmRequest, Message
from vocero.inference.dialogue.small_talk import Persona, first_person, reply

PROFILES = Path(__file__).resolve().parents[2] / "fixtures" / "profiles"


def system_of(profile: str) -> str:
    data = yaml.safe_load((PROFILES / f"{profile}.yaml").read_text())
    return "\n".join([data["instructions"], *data.get("rules", [])])


def request(text: str, *, system: str, tools: list[ToolDefinition], said: str = "") -> LlmRequest:
    history = [Message(role="assistant", content=said)] if said else []
    messages = [Message(role="system", content=system), *history]
    return LlmRequest(messages=[*messages, Message(role="user", content=text)], tools=tools)


def demo(text: str, said: str = "") -> str:
    return reply(
        text, request(text, system=system_of("demo"), tools=corpus.demo_tools(), said=said)
    )


def test_the_agent_introduces_itself_in_its_profiles_words() -> None:
    assert demo("Hello there!") == "Hello, this is the phone assistant of Acme. How can I help you?"
    answer = demo("Hello, who am I speaking with?")
    assert answer.startswith("Hello, this is the phone assistant of Acme. ")
    assert "check the status of your orders" in answer


@pytest.mark.parametrize(
    ("instructions", "expected"),
    [
        (
            "You help callers check the status of their orders.",
            "I can help you check the status of your orders.",
        ),
        (
            "You can only tell callers the status of their orders.",
            "I can only tell you the status of your orders.",
        ),
        ("You are the phone assistant of Acme.", "I'm the phone assistant of Acme."),
    ],
)
def test_instructions_to_the_agent_become_the_agent_speaking(
    instructions: str, expected: str
) -> None:
    assert first_person(instructions) == expected


def test_capabilities_come_from_the_profile_and_only_it() -> None:
    assert demo("What can you help me with?") == (
        "Sure. I can help you check the status of your orders and view, reschedule or cancel your "
        "appointments. If you would like a call back, tell me when."
    )
    globex = request("What can you do?", system=system_of("globex"), tools=corpus.demo_tools()[:1])
    assert reply("What can you do?", globex) == (
        "Sure. I can only tell you the status of your orders."
    )


def test_without_instructions_the_tool_descriptions_say_what_the_agent_can_do() -> None:
    tools = [
        ToolDefinition(
            name="orders.status",
            description="Look up one of the caller's orders. Read only.",
            input_schema={},
        ),
        ToolDefinition(
            name="callbacks.arrange", builtin="followups.record", description="Call back.",
            input_schema={},
        ),
    ]
    persona = Persona.of(request("hi", system="Be brief.", tools=tools))
    assert persona == Persona(who="", can="I can look up one of your orders.", call_backs=True)


def test_out_of_scope_requests_are_declined_with_what_the_agent_can_do() -> None:
    for text in ("What's the weather like?", "Tell me a joke.", "Can you check where a 124?"):
        answer = demo(text)
        assert answer.startswith("Sorry, I can't help with that here. I can help you check")
    plain = request("Tell me a joke.", system=system_of("globex"), tools=corpus.demo_tools()[:1])
    assert "call back" not in reply("Tell me a joke.", plain), "no call-back tool, no offer"


def test_thanks_goodbye_and_repeat() -> None:
    assert demo("Thanks, that's all I needed.") == "Thank you for calling. Goodbye."
    assert demo("Great, thank you!").startswith("You're welcome.")
    assert demo("Sorry, could you say that again?", said="Order A123 has shipped.") == (
        "Of course. Order A123 has shipped."
    )
    assert demo("How are you today?") == "I'm well, thank you. How can I help you?"


def test_every_corpus_reply_opens_with_a_short_sentence() -> None:
    """The first sentence is what the TTS speaks first: short, so the caller hears it soon."""
    texts = [r["text"] for r in corpus.load()["requests"] if r.get("reply")]
    assert len(texts) >= 10
    for text in texts:
        answer = demo(text)
        first = answer.split(". ")[0]
        assert answer and len(first.split()) <= 16, (text, answer)
        assert "Alex" not in answer and "software" not in answer
