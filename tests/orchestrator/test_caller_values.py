"""The caller's values a turn's planner is given (``SessionCore.caller_values``) are exactly
those of every caller line in the history: each line is read once, not every turn, and the set
follows the history when lines go and when the caller's day changes."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from vocero.bench.realtime import _session
from vocero.contracts.builtins import zone_of
from vocero.contracts.ports import Message
from vocero.orchestrator.core import SessionCore
from vocero.speech import values
from vocero.speech.values import text_values


def _today(core: SessionCore) -> date:
    zone = zone_of(core.ctx.caller.timezone)
    return datetime.fromtimestamp(core.clock.now(), UTC).astimezone(zone).date()


def test_caller_values_match_every_caller_line_and_read_each_line_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    session, _ = _session()
    core = session.core
    said = ["my order is A-1234", "deliver it on March 3rd at 4pm", "thanks", "two boxes, $12.50"]
    reads: list[str] = []
    original = values.critical_values

    def counting(text: str, **kwargs: object) -> list[values.Value]:
        reads.append(text)
        return original(text, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(values, "critical_values", counting)
    for line in said:
        core.remember(Message(role="user", content=line))
        core.remember(Message(role="assistant", content="on Friday, 9 boxes"))
        got = core.caller_values()
        monkeypatch.setattr(values, "critical_values", original)
        expected = text_values(
            [m.content for m in core.history if m.role == "user"], today=_today(core)
        )
        monkeypatch.setattr(values, "critical_values", counting)
        assert got == frozenset(expected)
    assert sorted(reads) == sorted(said)  # every caller line read once, none of the agent's
    assert ("weekday", "fri") not in core.caller_values()

    gone = next(m for m in core.history if m.content == said[1])
    assert core.history.remove(gone)
    expected = text_values(
        [m.content for m in core.history if m.role == "user"], today=_today(core)
    )
    assert core.caller_values() == frozenset(expected)
    assert not any(kind == "time" for kind, _ in core.caller_values())


def test_a_new_day_reads_the_lines_again(monkeypatch: pytest.MonkeyPatch) -> None:
    session, _ = _session()
    core = session.core
    core.remember(Message(role="user", content="call me tomorrow"))
    first = core.caller_values()
    clock = core.clock
    later = clock.now() + 86_400
    monkeypatch.setattr(clock, "now", lambda: later)
    second = core.caller_values()
    assert second == frozenset(
        text_values(["call me tomorrow"], today=_today(core))
    )
    assert first != second  # "tomorrow" is another date now
