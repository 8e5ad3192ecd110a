"""What a :class:`~vocero.observability.metrics.Metrics` registry renders, read back with
Prometheus' own text parser."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from vocero.observability.metrics import Metrics


def rendered_samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of ``metrics.render()``: ``(name, sorted labels) -> value``."""
    body, _ = metrics.render()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body.decode())
        for s in family.samples
    }
