"""A generic read-out says the caller's identifier once, as the record spells it, in grammar
that agrees ("has arrived", never "is arrived"), says what the record is ("It is a camping
stove."), and a not-found answer names the thing the identifier names (issue 42). A camping
shop's hire desk, with names no suite uses."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from vocero.speech.model import ToolEvidence
from vocero.speech.readout import ReadoutContext, read_out

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def ctx(caller_words: str) -> ReadoutContext:
    return ReadoutContext(now=NOW, timezone="Europe/London", caller_words=caller_words)


def call(tool: str, result: dict[str, Any], **fields: Any) -> ToolEvidence:
    return ToolEvidence(tool_call_id="call_1", tool=tool, result=result, **fields)


def test_the_identifier_is_said_once_as_recorded_and_the_status_agrees() -> None:
    result = {"hire_no": "5521-Q", "kit": "camping stove", "status": "arrived at the depot"}
    said = read_out(None, call("kits.where_is", result, arguments={"hire_no": "5521Q"}),
                    ctx("has my kit come in, hire 5521-Q"))  # fmt: skip
    assert said.text.startswith("Kit 5521-Q has arrived at the depot."), said.text
    assert said.text.count("5521") == 1, said.text
    assert "It is a camping stove." in said.text, said.text


def test_a_status_that_is_a_state_keeps_is() -> None:
    said = read_out(None, call("kits.where_is", {"hire_no": "5521-Q", "status": "on order"},
                               arguments={"hire_no": "5521-Q"}), ctx("hire 5521-Q"))  # fmt: skip
    assert said.text.startswith("Kit 5521-Q is on order."), said.text


def test_not_found_names_what_the_identifier_names_not_another_word_of_the_tool() -> None:
    failed = call("depot.hire_card", {"error": "not_found: no hire QX-9001"}, status="rejected",
                  arguments={"hire_ref": "QX-9001"})  # fmt: skip
    said = read_out(None, failed, ctx("is hire QX-9001 ready"))
    assert said.text.startswith("I couldn't find hire QX-9001"), said.text
