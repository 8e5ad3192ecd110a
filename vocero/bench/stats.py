"""The one way every benchmark summarises its samples (docs/slo.md reads these figures)."""

from __future__ import annotations

import statistics
from collections.abc import Iterable

from vocero.observability.percentiles import percentile


def percentiles(
    samples: Iterable[float], *, scale: float = 1.0, digits: int = 4
) -> dict[str, float]:
    """``n``, ``p50``, ``p95``, ``p99``, ``max`` and ``mean`` of ``samples``, each multiplied by
    ``scale`` (1000: seconds to milliseconds) and rounded to ``digits``; each percentile is
    :func:`~vocero.observability.percentiles.percentile`'s. No samples: ``{"n": 0}``."""
    ordered = sorted(sample * scale for sample in samples)
    if not ordered:
        return {"n": 0}

    def pick(q: float) -> float:
        return round(percentile(ordered, q), digits)

    return {
        "n": len(ordered),
        "p50": pick(0.50),
        "p95": pick(0.95),
        "p99": pick(0.99),
        "max": round(ordered[-1], digits),
        "mean": round(statistics.fmean(ordered), digits),
    }
