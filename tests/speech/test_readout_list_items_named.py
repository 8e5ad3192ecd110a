"""A generic list read-out names each item by the field that tells the items apart (issue 42).

A blind profile's list of free places said "a class at 10:00 and a class at 18:30": its items
carry their kind in a field no naming rule knows (``activity``). The field whose words differ
between the items names each one. Names here are of a bicycle workshop, used by no suite.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from vocero.speech.model import ToolEvidence
from vocero.speech.readout import ReadoutContext, read_out

NOW = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)


def said(tool: str, result: dict[str, Any]) -> str:
    call = ToolEvidence(tool_call_id="c1", tool=tool, result=result, arguments={})
    context = ReadoutContext(now=NOW, timezone="Europe/Lisbon", caller_words="")
    return read_out(None, call, context).text


def test_each_item_is_named_by_the_field_that_tells_them_apart() -> None:
    # Old code: "You have two slots: a slot at 10 AM and a slot at 6:30 PM."
    result = {"day": "2026-12-10", "slots": [
        {"slot_id": "WS-1", "repair": "wheel_truing", "starts_at": "10:00", "free_benches": 2},
        {"slot_id": "WS-2", "repair": "brake_bleed", "starts_at": "18:30", "free_benches": 1},
    ]}  # fmt: skip
    text = said("bench.free_slots", result)
    assert "wheel truing slot" in text and "brake bleed slot" in text, text
    assert "WS-1" not in text and "_" not in text, text


def test_a_field_every_item_shares_names_none() -> None:
    result = {"slots": [
        {"slot_id": "WS-1", "repair": "service", "starts_at": "10:00"},
        {"slot_id": "WS-2", "repair": "service", "starts_at": "18:30"},
    ]}  # fmt: skip
    text = said("bench.free_slots", result)
    assert "service slot" not in text, text
