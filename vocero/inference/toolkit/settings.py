"""What every backend's runners share in their settings: admission per model, and the error a
missing model file raises."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class QueueSettings:
    """Admission for one model: concurrent jobs, waiting room, and how long a job may wait."""

    capacity: int = 1
    max_queue: int = 4
    deadline_s: float = 2.0


class ModelNotFoundError(FileNotFoundError):
    """A model file is neither configured nor installed; the message says how to get it."""


def existing(path: str, variable: str) -> str:
    """``path`` as configured by ``variable``, or :class:`ModelNotFoundError` saying so."""
    if not Path(path).exists():
        raise ModelNotFoundError(f"{variable}={path}: no such file or directory")
    return path
