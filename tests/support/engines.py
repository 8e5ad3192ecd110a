"""Serving engines over real HTTP for the remote-inference tests (docs/deployment.md).

:func:`llama_server`: llama-cpp-python's own OpenAI-compatible server (its ``server`` extra) on
the SmolLM2 GGUF the CPU runners ship, as a subprocess. :class:`ScriptedEngine`: an
OpenAI-compatible chat completions server whose answers a test scripts (a tool call the model
would have to be coaxed into, an endpoint that dies, a stream that never ends), served by uvicorn
on a real socket so the adapter's HTTP path is the one under test; it records what it received
and when each stream's client went away.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import sys
import threading
import time
import wave
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.support.polling import wait_for
from tests.support.servers import ServerProcess, free_port
from vocero.inference.cpu.settings import CpuSettings, llm_model_path


@contextmanager
def llama_server(threads: int = 1) -> Iterator[str]:
    """``python -m llama_cpp.server`` on SmolLM2-135M; yields its base URL once it answers."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    command = [sys.executable, "-m", "llama_cpp.server", "--model",
               llm_model_path(CpuSettings.from_env()), "--host", "127.0.0.1", "--port", str(port),
               "--n_ctx", "2048", "--n_threads", str(threads),
               "--chat_format", "chatml-function-calling"]
    with ServerProcess("llama.cpp server", command, port=port, ready=lambda: _answers(url)):
        yield url


def _answers(url: str) -> bool:
    try:
        return httpx.get(url + "/models", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


@dataclass
class Rule:
    match: str
    text: str = ""
    tool: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    endless: bool = False
    """Stream words until the client goes away."""
    delay_s: float = 0.0
    """Wait this long before the first event (an engine that has stalled)."""


class ScriptedEngine:
    """An OpenAI-compatible ``/v1/chat/completions`` (and ``/v1/models``) answering by rules
    matched against the last user message; ``tools=False`` refuses requests with ``tools``."""

    def __init__(
        self, rules: list[Rule], *, tools: bool = True, json_schema: bool = True,
        json_answer: dict[str, Any] | None = None,
    ) -> None:
        self.rules = rules
        self.tools = tools
        self.json_schema = json_schema
        """``False``: ``response_format`` ``json_schema`` is refused the way llama-cpp-python's
        server refuses it (a 500 naming the field); ``json_object`` with a schema is taken."""
        self.json_answer = json_answer
        """What a request with a ``response_format`` is answered (as the message's JSON)."""
        self.dead = False
        """Every request fails with 503 (the engine is down behind its proxy)."""
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str] = []
        self.closed_at: list[float] = []
        """``perf_counter`` when each endless stream saw its client disconnect."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        app = Starlette(routes=[
            Route("/v1/chat/completions", self._complete, methods=["POST"]),
            Route("/v1/models", self._models),
            Route("/v1/audio/speech", self._speech, methods=["POST"]),
            Route("/v1/audio/transcriptions", self._transcribe, methods=["POST"]),
        ])
        self.speech_rate = 22050
        self.transcript = "hello there"
        self._server = uvicorn.Server(
            uvicorn.Config(
                app, port=self.port, log_level="warning", lifespan="off", log_config=None
            )
        )
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def __enter__(self) -> ScriptedEngine:
        self._thread.start()
        wait_for("scripted engine", lambda: self._server.started, timeout_s=10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)

    async def _speech(self, request: Request) -> Response:
        """One second of a tone per 10 characters, as a WAV streamed in odd-sized pieces."""
        body = await request.json()
        self.requests.append(body)
        if self.dead:
            return JSONResponse({"error": {"message": "down"}}, status_code=503)
        samples = self.speech_rate * max(1, len(body["input"]) // 10)
        wav = io.BytesIO()
        with wave.open(wav, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(self.speech_rate)
            w.writeframes(b"\x10\x00" * samples)
        data = wav.getvalue()

        async def pieces() -> AsyncIterator[bytes]:
            for at in range(0, len(data), 1001):
                yield data[at:at + 1001]

        return StreamingResponse(pieces(), media_type="audio/wav")

    async def _transcribe(self, request: Request) -> Response:
        form = await request.form()
        upload = form["file"]
        assert not isinstance(upload, str)
        audio = await upload.read()
        self.requests.append({k: v for k, v in form.items() if isinstance(v, str)}
                             | {"audio_bytes": len(audio)})
        if self.dead:
            return JSONResponse({"error": {"message": "down"}}, status_code=503)
        return JSONResponse({"text": " " + self.transcript + " "})

    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

    async def _complete(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        self.authorizations.append(request.headers.get("authorization", ""))
        if self.dead:
            return JSONResponse({"error": {"message": "down"}}, status_code=503)
        if body.get("tools") and not self.tools:
            return JSONResponse({"error": {"message": "tools not supported"}}, status_code=400)
        shape = (body.get("response_format") or {}).get("type")
        if shape == "json_schema" and not self.json_schema:
            return JSONResponse({"error": {"message": "1 validation error: ('body', "
                                "'response_format', 'type'): Input should be 'text' or "
                                "'json_object'"}}, status_code=500)
        if not body.get("stream"):
            content = json.dumps(self.json_answer) if shape and self.json_answer else "OK"
            return JSONResponse(
                {"choices": [{"message": {"role": "assistant", "content": content}}]}
            )
        said = next((m["content"] for m in reversed(body["messages"]) if m["role"] == "user"), "")
        rule = next((r for r in self.rules if re.search(r.match, said, re.IGNORECASE)), None)
        return StreamingResponse(self._events(rule, request), media_type="text/event-stream")

    async def _events(self, rule: Rule | None, request: Request) -> AsyncIterator[str]:
        if rule is not None and rule.delay_s:
            # Not a wait for the test: the stall is the engine's behaviour under test (a read
            # timeout must fire while it lasts).
            await asyncio.sleep(rule.delay_s)
        if rule is not None and rule.tool:
            arguments = json.dumps(rule.arguments)
            yield _event({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                          "function": {"name": rule.tool, "arguments": ""}}]})
            for at in range(0, len(arguments), 5):  # arguments arrive in pieces
                yield _event({"tool_calls": [{"index": 0,
                                              "function": {"arguments": arguments[at:at + 5]}}]})
        elif rule is not None and rule.endless:
            try:
                while True:
                    yield _event({"content": "and so on, "})
                    # The engine's own token pace (100 a second), so the endless stream
                    # does not flood the socket; nothing in a test waits on it.
                    await asyncio.sleep(0.01)
            finally:
                self.closed_at.append(time.perf_counter())
        else:
            for word in (rule.text if rule else "I am not sure.").split(" "):
                yield _event({"content": word + " "})
        yield "data: [DONE]\n\n"


def _event(delta: dict[str, Any]) -> str:
    return "data: " + json.dumps({"choices": [{"index": 0, "delta": delta}]}) + "\n\n"
