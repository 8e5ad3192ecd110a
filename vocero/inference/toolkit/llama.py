"""llama-cpp-python behind three blocking calls: a JSON object under a schema, a streamed chat
reply, and a streamed raw completion under a GBNF grammar (for hand-built prompt formats)."""

from __future__ import annotations

import atexit
import json
from collections.abc import Iterator
from typing import Any

import structlog

from vocero.inference import threads

log = structlog.get_logger(__name__)


class LlamaEngine:
    """One GGUF model, loaded once per process and path."""

    def __init__(
        self,
        model_path: str,
        *,
        n_ctx: int = 2048,
        threads_count: int = 2,
        chat_format: str | None = "chatml",
        n_gpu_layers: int = 0,
        seed: int = 7,
    ) -> None:
        self.model_path = model_path
        self._options: dict[str, Any] = {
            "n_ctx": n_ctx,
            "n_threads": threads_count,
            "chat_format": chat_format,
            "n_gpu_layers": n_gpu_layers,
            "seed": seed,
        }
        self._llm: Any = None

    def load(self) -> None:
        key = ("llama", self.model_path, *sorted(self._options.items()))
        self._llm = threads.load_once(key, self._create)

    def _create(self) -> Any:
        from llama_cpp import Llama

        log.info("llm.model_loading", model=self.model_path)
        llm = Llama(model_path=self.model_path, verbose=False, **self._options)
        atexit.register(llm.close)  # before interpreter teardown, which breaks Llama.__del__
        return llm

    @property
    def llm(self) -> Any:
        if self._llm is None:
            self.load()
        return self._llm

    def json_object(
        self, messages: list[dict[str, str]], schema: dict[str, Any], *, max_tokens: int = 160
    ) -> dict[str, Any]:
        """One JSON object that the grammar forces to match ``schema``."""
        result = self.llm.create_chat_completion(
            messages=messages,
            response_format={"type": "json_object", "schema": schema},
            temperature=0.0,
            max_tokens=max_tokens,
        )
        text = result["choices"][0]["message"]["content"] or "{}"
        value: dict[str, Any] = json.loads(text)
        return value

    def chat_stream(self, messages: list[dict[str, str]], *, max_tokens: int) -> Iterator[str]:
        """The reply's text deltas as the model produces them."""
        stream = self.llm.create_chat_completion(
            messages=messages, temperature=0.2, top_p=0.9, max_tokens=max_tokens, stream=True
        )
        try:
            for chunk in stream:
                delta = chunk["choices"][0]["delta"].get("content")
                if delta:
                    yield delta
        finally:
            stream.close()

    def completion_stream(
        self, prompt: str, *, grammar: str | None, max_tokens: int, stop: list[str]
    ) -> Iterator[str]:
        """A raw completion of ``prompt``, optionally under a GBNF grammar."""
        from llama_cpp.llama_grammar import LlamaGrammar

        compiled = LlamaGrammar.from_string(grammar, verbose=False) if grammar else None
        stream = self.llm.create_completion(
            prompt, grammar=compiled, temperature=0.0, max_tokens=max_tokens, stop=stop, stream=True
        )
        try:
            for chunk in stream:
                text = chunk["choices"][0]["text"]
                if text:
                    yield text
        finally:
            stream.close()
