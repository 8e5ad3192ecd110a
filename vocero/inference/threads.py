"""Blocking model calls on worker threads, with a cancellation point between chunks.

A model call cannot be interrupted half-way, so every runner feeds work to its model one chunk at
a time (a token, a sentence, an utterance): a cancelled caller waits for at most the chunk in
progress, then the iterator is closed and nothing more is computed.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TypeVar

import anyio
import anyio.to_thread

T = TypeVar("T")
_DONE = object()


async def run(func: Callable[[], T]) -> T:
    """Run one blocking call on a worker thread; cancellation waits for it to return."""
    return await anyio.to_thread.run_sync(func)


async def iterate(make: Callable[[], Iterator[T]]) -> AsyncIterator[T]:
    """Drive a blocking iterator on worker threads, one ``next()`` per step."""
    iterator = await anyio.to_thread.run_sync(make)
    try:
        while True:
            item = await anyio.to_thread.run_sync(_next, iterator)
            if item is _DONE:
                return
            yield item  # type: ignore[misc]
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            close()


def _next(iterator: Iterator[T]) -> object:
    return next(iterator, _DONE)


_models: dict[tuple[object, ...], object] = {}
_models_lock = threading.Lock()


def load_once(key: tuple[object, ...], factory: Callable[[], T]) -> T:
    """One loaded model per process and key (kind, path, options), shared by every runner that
    names it: tests, warm-ups and a second runner set reuse the weights already in memory."""
    with _models_lock:
        if key not in _models:
            _models[key] = factory()
        return _models[key]  # type: ignore[return-value]
