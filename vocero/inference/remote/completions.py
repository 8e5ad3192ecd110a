"""Chat completion calls shared by the LLM runners on an endpoint: one JSON object under a
schema, and a streamed reply's text."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import structlog

from vocero.inference.remote import sse
from vocero.inference.remote.endpoint import Endpoint, EndpointHealth

log = structlog.get_logger(__name__)


class JsonCalls:
    """Chat completions that answer one JSON object under a schema, or stream text.

    The schema goes the OpenAI way first (``response_format: json_schema``: vLLM, llama.cpp's
    ``llama-server``, Ollama); a server that refuses that shape (llama-cpp-python's server knows
    only ``json_object`` and answers a 500 that names ``response_format``) is asked again with
    ``{"type": "json_object", "schema": ...}``, and that shape is kept for the endpoint's later
    calls.
    """

    def __init__(self, endpoint: Endpoint, health: EndpointHealth) -> None:
        self.endpoint = endpoint
        self.health = health
        self._client: httpx.AsyncClient | None = None
        self._shape = "json_schema"

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = self.health.client()
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()

    async def json_object(
        self, messages: list[dict[str, Any]], shape: dict[str, Any], *, max_tokens: int
    ) -> dict[str, Any]:
        for _attempt in range(2):
            body = {
                "model": self.endpoint.model, "messages": messages, "max_tokens": max_tokens,
                "temperature": 0.0, "response_format": self._format(shape),
            }
            self.health.in_flight += 1
            try:
                response = await self.client.post("/chat/completions", json=body)
            except httpx.HTTPError as exc:
                raise self.health.from_exception(exc) from exc
            finally:
                self.health.in_flight -= 1
            if self._shape == "json_schema" and _refuses_the_shape(response):
                log.info("llm.response_format_fallback", status=response.status_code)
                self._shape = "json_object"
                continue
            if response.is_error:
                raise self.health.failed(response.status_code, f"HTTP {response.status_code}")
            self.health.ok()
            return _object(response.json())
        raise self.health.failed(response.status_code, "no JSON-schema response format")

    async def chat_stream(
        self, messages: list[dict[str, Any]], *, max_tokens: int
    ) -> AsyncIterator[str]:
        body = {
            "model": self.endpoint.model, "messages": messages, "max_tokens": max_tokens,
            "temperature": 0.2, "top_p": 0.9, "stream": True,
        }
        self.health.in_flight += 1
        try:
            async with self.client.stream("POST", "/chat/completions", json=body) as response:
                if response.is_error:
                    raise self.health.failed(response.status_code, f"HTTP {response.status_code}")
                async for choice in sse.choices(response.aiter_lines()):
                    content = choice.get("delta", {}).get("content")
                    if content:
                        yield content
        except httpx.HTTPError as exc:
            raise self.health.from_exception(exc) from exc
        finally:
            self.health.in_flight -= 1
        self.health.ok()

    def _format(self, shape: dict[str, Any]) -> dict[str, Any]:
        if self._shape == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": "answer", "schema": shape}}
        return {"type": "json_object", "schema": shape}


def _refuses_the_shape(response: httpx.Response) -> bool:
    if response.status_code in (400, 422):
        return True
    return response.status_code == 500 and "response_format" in response.text


def _object(payload: dict[str, Any]) -> dict[str, Any]:
    """The answer's JSON object; ``{}`` when the model's text is not one (the runner then asks
    the caller, as it does when a value breaks the tool's schema)."""
    try:
        content = payload["choices"][0]["message"].get("content") or "{}"
        value = json.loads(content)
    except (KeyError, IndexError, AttributeError, json.JSONDecodeError):
        log.warning("llm.answer_not_json")
        return {}
    return value if isinstance(value, dict) else {}
