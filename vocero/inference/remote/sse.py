"""Server-sent events of a streamed chat completion, and the tool calls they carry in pieces.

OpenAI streaming: ``data: {json}`` lines, ``data: [DONE]`` at the end; each chunk's
``choices[0].delta`` holds ``content`` text or ``tool_calls`` fragments keyed by ``index``
(the first fragment names the function, the rest append to its ``arguments`` string).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class Call:
    name: str = ""
    arguments: str = ""


class ToolCalls:
    """Tool-call fragments gathered by index."""

    def __init__(self) -> None:
        self._calls: dict[int, Call] = {}

    def __bool__(self) -> bool:
        return any(c.name for c in self._calls.values())

    def add(self, choice: dict[str, Any]) -> None:
        for fragment in choice.get("delta", {}).get("tool_calls") or []:
            call = self._calls.setdefault(int(fragment.get("index", 0)), Call())
            function = fragment.get("function") or {}
            call.name += function.get("name") or ""
            call.arguments += function.get("arguments") or ""

    def first(self) -> Call:
        """The first named call (one intent a turn, as every runner yields)."""
        return next(c for _, c in sorted(self._calls.items()) if c.name)


async def choices(lines: AsyncIterator[str]) -> AsyncIterator[dict[str, Any]]:
    """The first choice of each event until ``[DONE]``; comments and keep-alives skipped."""
    async for line in lines:
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        try:
            event = json.loads(data)
        except json.JSONDecodeError:
            continue
        picked = event.get("choices") or []
        if picked:
            yield picked[0]
