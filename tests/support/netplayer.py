"""The caller's browser of the impaired-network tests: the package's player
(:mod:`vocero.bench.netplayer`), which ``vocero bench network`` plays with too."""

from __future__ import annotations

from vocero.bench.netplayer import REPORT_S, TICK_S, Played, Player

__all__ = ["REPORT_S", "TICK_S", "Played", "Player"]
