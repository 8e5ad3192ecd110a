"""``--llm-mode routed``: the CPU runners' dialogue manager keeps deciding, and the model it asks
for the little it cannot decide by rule is served by an endpoint.

The CPU agent (``toolkit/llm.py``, ADR-0020) chooses tools and their structured values by rule and
answers from the profile's words; its small model only fills free-text fields under a JSON
schema, classifies an unclear confirmation answer, and chats where a deployment opted in. With
``routed`` those three calls go to the endpoint (a llama.cpp server on the same SmolLM2 GGUF, say)
and the worker loads no model weights; everything else is the in-process runner unchanged.
``agent`` (the default, :class:`~vocero.inference.remote.llm.RemoteLlm`) is for models that can
do the whole job themselves, tools included.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import structlog

from vocero.contracts.errors import ErrorCode
from vocero.contracts.ports import RunnerStatus
from vocero.inference.remote.completions import JsonCalls
from vocero.inference.remote.endpoint import Endpoint, EndpointHealth
from vocero.inference.toolkit.llm import RoutedLlm

log = structlog.get_logger(__name__)


class RemoteRoutedLlm(RoutedLlm):
    """:class:`RoutedLlm` whose model calls are chat completions on ``endpoint``."""

    def __init__(self, local: RoutedLlm, endpoint: Endpoint) -> None:
        super().__init__(
            local._engine, local._queue, today=local._today, free_text=local._free_text,
            name="llm.routed.remote",
        )
        self.endpoint = endpoint
        self.health = EndpointHealth("llm", endpoint, ErrorCode.LLM_UNAVAILABLE)
        self._calls = JsonCalls(endpoint, self.health)

    def status(self) -> RunnerStatus:
        """The endpoint's health, with this runner's own admission queue."""
        own = super().status()
        remote = self.health.status()
        health = own.health if own.health != "ready" else remote.health
        return RunnerStatus(
            health=health, in_flight=own.in_flight, capacity=own.capacity,
            detail=remote.detail if own.health == "ready" else own.detail,
        )

    async def aclose(self) -> None:
        await self._calls.aclose()

    async def _load_model(self) -> None:
        """No weights here: the endpoint must answer ``/models``."""
        try:
            response = await self._calls.client.get("/models")
            response.raise_for_status()
        except httpx.HTTPError as exc:
            raise self.health.from_exception(exc) from exc
        self.health.ok()

    async def _json_object(
        self, messages: list[dict[str, str]], shape: dict[str, Any], *, max_tokens: int = 160
    ) -> dict[str, Any]:
        return await self._calls.json_object(messages, shape, max_tokens=max_tokens)

    async def _chat_stream(
        self, messages: list[dict[str, str]], *, max_tokens: int
    ) -> AsyncIterator[str]:
        async for text in self._calls.chat_stream(messages, max_tokens=max_tokens):
            yield text
