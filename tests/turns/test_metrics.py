"""``turn_endpointing_ms`` reaches /metrics through the orchestrator's metric port."""

from __future__ import annotations

from tests.support.metric_samples import rendered_samples
from vocero.app.adapters.telemetry import MetricsPort
from vocero.observability.metrics import Metrics


def test_the_endpointing_latency_is_a_millisecond_histogram() -> None:
    metrics = Metrics()
    MetricsPort(metrics).observe_ms("turn_endpointing_ms", 180.0)
    MetricsPort(metrics).observe_ms("turn_endpointing_ms", 1600.0)
    samples = rendered_samples(metrics)
    assert samples[("vocero_turn_endpointing_ms_count", ())] == 2
    assert samples[("vocero_turn_endpointing_ms_bucket", (("le", "200.0"),))] == 1
    assert samples[("vocero_turn_endpointing_ms_bucket", (("le", "1500.0"),))] == 1
    assert samples[("vocero_turn_endpointing_ms_sum", ())] == 1780.0
