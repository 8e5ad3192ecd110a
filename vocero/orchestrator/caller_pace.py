"""Each caller's own pace: how long they pause inside a turn, learnt during the call (ADR-0038).

Sans-IO. The turn policy tells it every pause that turned out *not* to end the turn (the caller
went on speaking in the same utterance after it); it keeps an exponential moving average of
them and, once it has heard :attr:`PaceSettings.after_pauses` of them, gives a *silence floor*:
the least silence after which the policy may end this caller's turn (their usual pause times
:data:`MARGIN`, within ``floor_min_ms`` and ``floor_max_ms``). A caller who pauses long
mid-sentence is given longer; a caller whose pauses are short is answered sooner. Until then
(and with the pace off) there is no learnt floor and the profile's own silences stand.

A pause that *did* end the turn and was then taken back (ADR-0037's yield and merge: the agent
began to answer and the caller went on within the merge window) is told to it too
(:meth:`CallerPace.cut_off`): it was a pause inside the caller's turn, and the one that cost them a
cut-off. It is measured as every pause is, from the caller's last word before the commit to the
frame in which they spoke again, so it joins the same average. It counts as enough evidence on
its own (the floor then moves at once), and the average is raised to at least that pause: the
floor covers a pause of that length from the next turn on.

One :class:`CallerPace` lives as long as its session: a new session starts from nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog

log = structlog.get_logger("vocero.caller_pace")

MIN_PAUSE_MS = 200.0
"""A silence shorter than this between voiced frames is a gap between words, not a pause."""
ALPHA = 0.35
"""The weight of the newest pause in the moving average (about the last five pauses count)."""
MARGIN = 1.2
"""The floor is the caller's usual pause and a fifth: most of their pauses end before it."""


@dataclass(frozen=True, slots=True)
class PaceSettings:
    """``vocero serve --caller-pace on|off --pace-floor-min-ms --pace-floor-max-ms
    --pace-after-pauses`` (ADR-0038)."""

    enabled: bool = True
    floor_min_ms: int = 250
    """The learnt floor never goes under this (a fast caller is still given a breath)."""
    floor_max_ms: int = 900
    """... nor over this (a slow caller is never held for more than this before the judge's
    verdict may end the turn; ``max_silence_ms`` stays the last resort)."""
    after_pauses: int = 2
    """Pauses heard before the floor moves: one pause says little about a caller."""


class CallerPace:
    """One caller's within-turn pauses and the silence floor they give."""

    def __init__(self, settings: PaceSettings | None = None) -> None:
        self.settings = settings or PaceSettings()
        self.pauses = 0
        """Within-turn pauses learnt so far."""
        self.average_ms: float | None = None
        """Their exponential moving average."""

    def went_on(self, pause_ms: float) -> None:
        """The caller was silent ``pause_ms`` and went on speaking: not a turn end."""
        if not self.settings.enabled or pause_ms < MIN_PAUSE_MS:
            return
        average = self.average_ms
        self.average_ms = pause_ms if average is None else average + ALPHA * (pause_ms - average)
        self.pauses += 1
        log.debug("caller_pace.pause", pause_ms=round(pause_ms), average_ms=round(self.average_ms),
                  pauses=self.pauses)

    def cut_off(self, pause_ms: float) -> None:
        """The turn was committed ``pause_ms`` after the caller's last word and they went on:
        the pause was inside their turn and the floor was too short for it. Learnt as any
        pause, then the average is at least this one and the floor is learnt, whatever the
        count (a cut-off is the evidence :attr:`PaceSettings.after_pauses` waits for)."""
        if not self.settings.enabled or pause_ms < MIN_PAUSE_MS:
            return
        self.went_on(pause_ms)
        self.average_ms = max(self.average_ms or 0.0, pause_ms)
        self.pauses = max(self.pauses, self.settings.after_pauses)
        log.info("caller_pace.cut_off", pause_ms=round(pause_ms),
                 average_ms=round(self.average_ms), floor_ms=self.floor_ms)

    @property
    def floor_ms(self) -> float | None:
        """The least silence before this caller's turn may end, once learnt; ``None`` before."""
        s = self.settings
        if not s.enabled or self.average_ms is None or self.pauses < s.after_pauses:
            return None
        return min(float(s.floor_max_ms), max(float(s.floor_min_ms), self.average_ms * MARGIN))
