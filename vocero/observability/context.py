"""Bind the session and turn to every log line written inside a block, via contextvars.

``with bind_session(session_id): ...`` in the session's task; ``with bind_turn(turn_id): ...``
around one turn. Child tasks started inside inherit the binding; leaving the block restores what
was bound before, so nested turns and concurrent sessions never see each other's ids.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import structlog


@contextmanager
def bind_session(session_id: str, **extra: str) -> Iterator[None]:
    """Bind ``session_id`` (and any other non-sensitive ids) for the duration of the block."""
    with structlog.contextvars.bound_contextvars(session_id=session_id, **extra):
        yield


@contextmanager
def bind_turn(turn_id: str, generation_id: str = "", **extra: str) -> Iterator[None]:
    """Bind ``turn_id`` and, once known, ``generation_id`` for the duration of the block."""
    ids = {"turn_id": turn_id, **({"generation_id": generation_id} if generation_id else {})}
    with structlog.contextvars.bound_contextvars(**ids, **extra):
        yield
