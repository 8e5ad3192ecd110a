"""The one percentile rule of the project: the benchmarks' figures (``vocero/bench/stats.py``),
the serving engines' scrape-time quantiles and a review bundle's queue ages all pick a sample
this way, so their numbers can be compared."""

from __future__ import annotations

from collections.abc import Sequence


def percentile(ordered: Sequence[float], q: float) -> float:
    """The sample at rank ``floor(q·n)`` of ``ordered`` (sorted ascending, not empty), the last
    one at most: always a value that was measured, never an interpolation."""
    if not ordered:
        raise ValueError("no samples")
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
