"""What the caller is likely to say that a speech recogniser may not know: the session's
vocabulary, handed to every final transcription as a hint (``Stt.transcribe(vocabulary=)``).

Most likely first:

1. identifiers the caller heard the agent say in this session, the latest first (a caller told
   "APT-1002 on Monday" says "move APT-1002");
2. the profile's own ``vocabulary``: the words its callers say, spelt as they should be written
   ("Saturdays", "unopened items", "order A123").

Not the claims' topics: they are keywords for matching, lower-case and many (60 in the demo
catalog), and as a Whisper prompt they made it write in lower case, cost 30-45 ms a recognition
and helped less than a dozen written terms (measured on the demo suite's lines).

Nothing here depends on a profile's names: every term comes from the profile or from what was
said. What a runner does with the hint is its own business (Whisper primes its decoder with the
terms it would not spell on its own; Parakeet ignores it)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from vocero.contracts.domain import AgentProfile
from vocero.contracts.ports import Message
from vocero.speech.forms import identifiers_in

MAX_TERMS = 48
"""More than a recogniser's prompt holds: it keeps the first ones."""
MAX_IDENTIFIERS = 8


def identifiers_heard(history: Iterable[Message]) -> list[str]:
    """Identifiers in what the caller heard the agent say (those the voice spelt out), the most
    recent first, each once."""
    found: list[str] = []
    for message in reversed(list(history)):
        if message.role != "assistant":
            continue
        for token in reversed(identifiers_in(message.content)):
            if any(c.isalpha() for c in token) and token not in found:  # not a bare date
                found.append(token)
                if len(found) == MAX_IDENTIFIERS:
                    return found
    return found


def profile_terms(profile: AgentProfile) -> list[str]:
    """The profile's vocabulary, each term once (case-insensitively)."""
    return _distinct(profile.vocabulary)


def session_vocabulary(heard: Sequence[str], profile: Sequence[str]) -> tuple[str, ...]:
    return tuple(_distinct([*heard, *profile])[:MAX_TERMS])


def _distinct(terms: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    kept: list[str] = []
    for term in terms:
        clean = " ".join(term.split())
        if clean and clean.casefold() not in seen:
            seen.add(clean.casefold())
            kept.append(clean)
    return kept
