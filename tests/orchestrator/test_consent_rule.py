"""Issue 42: one tested rule says what a "yes" is, and no runner's model can say it instead.

The reader (:mod:`vocero.contracts.lexicon.consent`) and every runner's confirmation
classification (CPU routed, GB10, remote agent, remote routed), each on a model scripted to answer
``confirm`` to everything: a line that is not a bare yes never comes out as ``confirm``; a line
that names a value comes out as a correction (``new_request``); a bare yes still confirms.
The orchestrator's own binding of the label is in ``test_consent_conversation.py``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.engines import ScriptedEngine
from vocero.contracts.lexicon import consent, for_locale, words_of
from vocero.contracts.ports import IntentClassified, LlmRequest, Message
from vocero.inference.gb10.llm import Llama31Llm
from vocero.inference.remote import Endpoint, RemoteLlm
from vocero.inference.remote.routed import RemoteRoutedLlm
from vocero.inference.toolkit.llm import LlmBase, RoutedLlm
from vocero.inference.toolkit.settings import QueueSettings

NOT_A_BARE_YES = {
    "values alone": ["Friday at 11", "tomorrow morning", "the 14th", "March 3rd at noon"],
    "a changed value asked": ["the 14th instead?", "Friday instead?", "how about 11?"],
    "a question": ["which one is that?", "what time did you say", "is it the Friday one"],
    "a hedge": ["I guess so", "probably", "maybe yes", "I think that's fine", "hmm okay"],
    "a yes that goes on": ["yes, but make it 11", "yes for Friday", "yeah, the 14th",
                           "sure, and add Priya", "ok Friday at 11", "correct, 3 people",
                           "yes please, at 4", "yes no"],
    "make that": ["make that Friday", "make that 11", "no wait, make that Friday at 11"],
    "actually": ["actually, 11", "actually Friday", "actually the other one"],
    "the one, which": ["that's the one at 11", "the one on Friday", "that's it but at 4",
                       "that's the one for Priya", "no, that's it"],
    "not this, that": ["not 9, 11", "not Friday, Saturday", "no, not that one"],
    "numbers": ["four", "11", "2 30", "one two three"],
    "names": ["Priya Raman", "for Tomasz", "the Kestrel room"],
    "other-language-ish words": ["vale bueno", "oui d'accord", "ja genau", "xqzt blorf"],
    "empty or noise": ["", "...", "uh", "um hmm", "?", "[inaudible]"],
}  # fmt: skip
LINES = [(family, line) for family, lines in NOT_A_BARE_YES.items() for line in lines]
BARE_YES = ["yes", "Yes.", "yes please", "Yeah, go ahead.", "that's right", "That\u2019s right",
            "correct", "sure, do it", "okay, thanks", "yep", "Yes?", "go for it please",
            "absolutely", "haan ji", "avunu", "Yes, that's the one.", "that's it, thanks",
            "Lovely, yes.", "spot on", "yes please, cheers"]  # fmt: skip
VALUES = ["Friday at 11", "the 14th", "11", "four", "at noon", "tomorrow", "March 3",
          "twenty", "3 people", "9:30 am"]  # fmt: skip


# ---------------------------------------------------------------------------------- the rule


@pytest.mark.parametrize(("family", "line"), LINES, ids=[f"{f}: {t!r}" for f, t in LINES])
def test_no_wording_but_a_bare_yes_is_consent(family: str, line: str) -> None:
    assert not consent.explicit_yes(line)
    assert consent.classify(line) != "confirm"
    assert consent.bound("confirm", line) != "confirm", "a model's confirm does not stand"


@pytest.mark.parametrize("line", BARE_YES)
def test_a_bare_yes_confirms(line: str) -> None:
    assert consent.explicit_yes(line)
    assert consent.classify(line) == "confirm"
    assert consent.bound("confirm", line) == "confirm"
    assert consent.bound("uncertain", line) == "uncertain", "the rule never adds a yes"


@pytest.mark.parametrize("line", ["Friday at 11", "the 14th instead?", "yes, but make it 11",
                                  "no wait, make that Friday at 11", "not 9, 11", "actually 11"])
def test_a_line_that_names_a_value_is_a_correction_never_a_yes(line: str) -> None:
    assert consent.bound("confirm", line) == "new_request"
    assert consent.bound("uncertain", line) == "new_request"
    refuses = line.startswith(("no", "not"))  # a no stays a no: nothing runs on it
    assert consent.bound("reject", line) == ("reject" if refuses else "new_request")


@pytest.mark.parametrize(("line", "taken"), [
    ("Priya Raman", "uncertain"), ("vale bueno", "uncertain"), ("Friday at 11", "new_request"),
    ("please don't", "reject"), ("forget it", "reject"), ("I'd rather not", "reject"),
    ("nahin", "reject"), ("no wait", "reject"),
])  # fmt: skip
def test_a_models_no_stands_only_for_a_line_that_refuses(line: str, taken: str) -> None:
    """A line that is not clearly a no is asked about (or is a correction), never guessed."""
    assert consent.bound("reject", line) == taken


def test_the_sessions_lexicon_names_values_in_its_language() -> None:
    hindi = for_locale("hi-IN")
    assert consent.names_value("shukravar", hindi) and not consent.names_value("shukravar")
    assert consent.bound("confirm", "haan, shukravar", hindi) == "new_request"


_WORD = st.from_regex(r"[a-zA-Z][a-z']{0,9}", fullmatch=True)
_SEPARATOR = st.sampled_from([" ", ", ", ". ", " - ", "! "])


@st.composite
def non_assent(draw: st.DrawFn) -> str:
    """Words and values in any order with at least one word that is no part of a bare yes,
    never starting with a yes word."""
    outsider = draw(st.one_of(
        _WORD.filter(lambda w: w.lower() not in consent.VOCABULARY),
        st.sampled_from(VALUES), st.integers(0, 9999).map(str),
    ))  # fmt: skip
    others = draw(st.lists(st.one_of(_WORD, st.sampled_from(VALUES)), max_size=5))
    words = [*others]
    words.insert(draw(st.integers(0, len(words))), outsider)
    return " ".join(words)


@settings(max_examples=300, deadline=None)
@given(non_assent())
def test_generated_lines_without_a_bare_yes_never_confirm(line: str) -> None:
    assert consent.classify(line) != "confirm"
    assert consent.bound("confirm", line) != "confirm"


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(BARE_YES), _SEPARATOR,
       st.sampled_from(["", "but ", "make it ", "and ", "for ", "at ", "actually "]),
       st.sampled_from(VALUES))
def test_generated_yes_lines_carrying_a_value_never_confirm(
    yes: str, separator: str, lead: str, value: str
) -> None:
    line = f"{yes.rstrip('.?')}{separator}{lead}{value}"
    assert consent.classify(line) != "confirm"
    assert consent.bound("confirm", line) == "new_request"


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=40))
def test_only_the_words_of_a_bare_yes_can_ever_confirm(line: str) -> None:
    """Whatever the text: a confirm that stands is made of the vocabulary alone, no digit."""
    if consent.bound("confirm", line) == "confirm":
        words = words_of(line.lower().replace("\u2019", "'"))
        assert words and set(words) <= consent.VOCABULARY
        assert not any(c.isdigit() for c in line)


# --------------------------------------------------- a yes that restates the pending action

ACTION = "rooms.reserve"
"""A pending action with generic names: a yes may restate its own verb and object."""
RESTATING_YES = {
    "yes and the verb": ["Yes, reserve it.", "yeah reserve that", "yes, reserve it please"],
    "go ahead and the verb": ["Go ahead and reserve it.", "yes, go ahead and reserve it for me",
                              "ok, reserve"],
    "yes, the verb and the object": ["yes, reserve the room", "Yep, reserve the rooms, thanks"],
    "another form of the verb": ["yes, go ahead with the reserving", "yes, reserved"],
    "the verb first": ["reserve it, yes", "Reserve the room. Yes please."],
    # Since stop 51: book, reserve and schedule say one action (Quarry Hill: "Yes, please book
    # it." to a room reservation read back as "book study room ..."); ADR-0041.
    "a verb that says the same action": ["yes, book it", "Yes, please book the room."],
}  # fmt: skip
NOT_RESTATING = {
    "the verb without a yes": ["reserve it", "Reserve the room.", "go on, reserve it"],
    "another action's verb": ["yes, cancel it", "yes, move the room", "yes, scrap it"],
    "a value beside the verb": ["yes, reserve it for Friday", "yes reserve it at 11",
                                "yes, reserve two rooms", "yes, reserve it tomorrow morning"],
    "a name or a thing beside the verb": ["yes, reserve it for Priya",
                                          "yes, reserve the Kestrel room",
                                          "yes, reserve the big one"],
    "a refusal beside the verb": ["yes, don't reserve it", "no, reserve it", "yes no reserve it",
                                  "yes, never reserve it", "yes, reserve nothing"],
    "a question": ["yes, reserve it?", "reserve it, yes?", "yes, which room?"],
    "a hedge": ["yes, maybe reserve it", "I guess, reserve it", "yes, reserve it I think"],
}  # fmt: skip
RESTATING = [(f, line) for f, lines in RESTATING_YES.items() for line in lines]
NOT = [(f, line) for f, lines in NOT_RESTATING.items() for line in lines]


@pytest.mark.parametrize(("family", "line"), RESTATING, ids=[f"{f}: {t!r}" for f, t in RESTATING])
def test_a_yes_restating_the_pending_actions_own_words_is_consent(family: str, line: str) -> None:
    assert consent.explicit_yes(line, ACTION)
    assert consent.classify(line, ACTION) == "confirm"
    assert consent.bound("confirm", line, action=ACTION) == "confirm"
    assert consent.bound("uncertain", line, action=ACTION) == "uncertain", "never adds a yes"
    # Without the pending action to restate, the line is not a bare yes.
    assert consent.classify(line) != "confirm"
    assert consent.bound("confirm", line) != "confirm"


@pytest.mark.parametrize(("family", "line"), NOT, ids=[f"{f}: {t!r}" for f, t in NOT])
def test_restating_is_consent_only_with_a_yes_and_nothing_more(family: str, line: str) -> None:
    assert not consent.explicit_yes(line, ACTION)
    assert consent.classify(line, ACTION) != "confirm"
    assert consent.bound("confirm", line, action=ACTION) != "confirm"


@pytest.mark.parametrize(("line", "taken"), [
    ("yes, reserve it for Friday", "new_request"), ("yes reserve it at 11", "new_request"),
    ("yes, reserve it for Priya", "uncertain"), ("yes, don't reserve it", "uncertain"),
])  # fmt: skip
def test_a_restating_yes_with_more_is_a_correction_or_asked_again(line: str, taken: str) -> None:
    assert consent.bound("confirm", line, action=ACTION) == taken


def test_the_words_of_an_action_are_its_tool_names_words_and_their_stems() -> None:
    assert {"room", "rooms", "reserve"} <= consent.action_words("rooms.reserve")
    assert {"call", "me", "nurse"} <= consent.action_words("nurse.call_me")
    for line in ("yes, call me", "yeah, call me please", "yes please call me"):
        assert consent.classify(line, "nurse.call_me") == "confirm", line
    for line in ("yes, call me at 5", "yes, call my wife", "yes, call me tomorrow"):
        assert consent.classify(line, "nurse.call_me") != "confirm", line
    assert consent.classify("yes, cancel it", "tickets.cancel") == "confirm"
    assert consent.classify("yes, cancel the tickets", "tickets.cancel") == "confirm"
    assert consent.classify("yes, cancelling it", "tickets.cancel") == "confirm"


@settings(max_examples=300, deadline=None)
@given(non_assent(), st.sampled_from([ACTION, "tickets.cancel", "nurse.call_me", "x"]))
def test_generated_non_assent_lines_never_confirm_whatever_the_pending_action(
    line: str, action: str
) -> None:
    """The outsider word of a generated line is no yes word; when it is not an action word or a
    pointing word either, no pending action makes the line a yes."""
    words = set(words_of(line))
    own = consent.action_words(action) | {"it", "that", "this", "them", "the", "a", "an", "my",
                                          "me", "for", "with", "and", "now", "then", "just",
                                          "go", "ahead"}  # fmt: skip
    if words <= consent.VOCABULARY | own and not consent.names_value(line):
        return  # every word is a yes, politeness, pointing or the action's: not a non-assent
    assert consent.classify(line, action) != "confirm"
    assert consent.bound("confirm", line, action=action) != "confirm"


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(RESTATING_YES["yes and the verb"] + RESTATING_YES["go ahead and the verb"]),
       st.sampled_from([", ", " ", " and "]),
       st.sampled_from([*VALUES, "for Priya", "not that", "the other one", "instead?"]))
def test_generated_restating_yes_lines_that_go_on_never_confirm(
    line: str, separator: str, more: str
) -> None:
    said = f"{line.rstrip('.')}{separator}{more}"
    assert consent.classify(said, ACTION) != "confirm"
    assert consent.bound("confirm", said, action=ACTION) != "confirm"


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=40))
def test_only_yes_pointing_and_action_words_can_ever_confirm_a_pending_action(line: str) -> None:
    if consent.bound("confirm", line, action=ACTION) == "confirm":
        words = words_of(line.lower().replace("\u2019", "'"))
        assert words and not consent.names_value(line)
        assert any(w in consent.VOCABULARY for w in words)
        assert not any(c.isdigit() for c in line) and "?" not in line


# ------------------------------------------------------------- every runner, scripted to say yes


class ConfirmingEngine:
    """An in-process engine whose every classification is ``confirm``."""

    def load(self) -> None:
        return None

    def json_object(
        self, messages: list[dict[str, str]], shape: dict[str, Any], *, max_tokens: int = 160
    ) -> dict[str, Any]:
        return {"intent": "confirm"}

    def chat_stream(self, messages: list[dict[str, str]], *, max_tokens: int) -> Iterator[str]:
        raise AssertionError("classification never chats")


def asked(line: str) -> LlmRequest:
    return LlmRequest(
        messages=[Message(role="system", content="You help callers with their bookings."),
                  Message(role="assistant", content="To confirm: move booking BK-101, when "
                          "Thursday at 9. Shall I go ahead?"),
                  Message(role="user", content=line)],
        tools=[], mode="classify_confirmation",
    )  # fmt: skip


async def labels(llm: Any, lines: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in lines:
        outputs = [o async for o in llm.generate(asked(line))]
        [label] = [o.intent for o in outputs if isinstance(o, IntentClassified)]
        out[line] = label
    return out


ALL_LINES = [line for _, line in LINES]
TODAY = dt.date(2026, 12, 2)


def in_process_runners() -> list[LlmBase]:
    engine: Any = ConfirmingEngine()
    return [RoutedLlm(engine, QueueSettings(), today=lambda: TODAY),
            Llama31Llm(engine, QueueSettings(), today=lambda: TODAY)]


@pytest.mark.anyio
@pytest.mark.parametrize("index", [0, 1], ids=["cpu-routed", "gb10"])
async def test_an_in_process_model_that_says_yes_to_everything_confirms_only_a_yes(
    index: int,
) -> None:
    llm = in_process_runners()[index]
    said = await labels(llm, ALL_LINES + BARE_YES)
    assert {line: label for line, label in said.items()
            if label == "confirm" and line not in BARE_YES} == {}
    assert all(said[line] == "confirm" for line in BARE_YES)


def test_an_endpoint_that_says_yes_to_everything_confirms_only_a_yes() -> None:
    """The remote agent runner and the remote routed runner, on an OpenAI-compatible server
    that answers every structured request ``{"intent": "confirm"}``."""
    with ScriptedEngine([], json_answer={"intent": "confirm"}) as server:
        endpoint = Endpoint(url=server.url, model="scripted")

        async def both() -> list[dict[str, str]]:
            agent = RemoteLlm(endpoint)
            local = RoutedLlm(ConfirmingEngine(), QueueSettings(), today=lambda: TODAY)  # type: ignore[arg-type]
            routed = RemoteRoutedLlm(local, endpoint)
            try:
                return [await labels(agent, ALL_LINES + BARE_YES),
                        await labels(routed, ALL_LINES + BARE_YES)]
            finally:
                await agent.aclose()
                await routed.aclose()

        results = anyio.run(both)
        asked_endpoint = len(server.requests)
    for said in results:
        assert {line: label for line, label in said.items()
                if label == "confirm" and line not in BARE_YES} == {}
        assert all(said[line] == "confirm" for line in BARE_YES)
    assert asked_endpoint > 0, "the endpoint was consulted for what the rule left open"
