"""Where a session's record goes: turns, generations, states and spoken units, off the hot path.

Kept apart from :mod:`.context` (which the relay reads): the records name store types, and the
relay never reaches the store, not even through an import.
"""

from __future__ import annotations

from typing import Protocol

from vocero.store.units import UnitEntry


class SessionRecorder(Protocol):
    """Persists the conversation off the hot path. Calls never block."""

    def turn(self, session_id: str, turn_id: str, source: str, text: str) -> None: ...

    def generation(
        self,
        session_id: str,
        generation_id: str,
        turn_id: str,
        *,
        status: str,
        generated_text: str,
        heard_text: str,
        played_ms: float,
        sent_ms: float,
    ) -> None: ...

    def state(self, session_id: str, state: str) -> None: ...

    def unit(self, entry: UnitEntry) -> None:
        """A spoken unit planned or decided (docs/grounding.md): the first decision is final."""
        ...

    def unit_audio(self, session_id: str, unit_id: str, *, sample_rate: int) -> AudioSink:
        """Where an admitted unit's audio goes as it is synthesized (for listening reviews)."""
        ...


class AudioSink(Protocol):
    def write(self, pcm16: bytes) -> None: ...

    def close(self) -> None: ...


class _NoAudio:
    def write(self, pcm16: bytes) -> None:
        return None

    def close(self) -> None:
        return None


class NullRecorder:
    def turn(self, session_id: str, turn_id: str, source: str, text: str) -> None:
        return None

    def generation(self, session_id: str, generation_id: str, turn_id: str, **_: object) -> None:
        return None

    def state(self, session_id: str, state: str) -> None:
        return None

    def unit(self, entry: UnitEntry) -> None:
        return None

    def unit_audio(self, session_id: str, unit_id: str, *, sample_rate: int) -> AudioSink:
        return _NoAudio()
