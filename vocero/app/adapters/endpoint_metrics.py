"""Per-stage metrics of the serving engines (docs/deployment.md "Faults"), read at scrape time
from each remote runner's :class:`~vocero.inference.remote.endpoint.EndpointHealth`:
``vocero_endpoint_errors_total{stage,status}`` (``status`` ``0``: no answer, ``open``: refused
by the breaker), ``vocero_endpoint_in_flight{stage}``, ``vocero_endpoint_breaker_open{stage}``,
``vocero_endpoint_first_token_ms{stage,quantile}`` (LLM: the first streamed event; TTS: the
first audio) and ``vocero_endpoint_tokens_per_second{stage,quantile}`` (LLM: streamed content
events per second after the first), both over the last 256 requests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from vocero.inference.remote.endpoint import EndpointHealth
from vocero.inference.runner_set import RunnerSet
from vocero.observability.percentiles import percentile


class EndpointCollector(Collector):
    def __init__(self, runners: RunnerSet) -> None:
        self._healths: list[EndpointHealth] = [
            health for stage in runners.remote_stages()
            if isinstance(health := getattr(getattr(runners, stage), "health", None),
                          EndpointHealth)
        ]

    def collect(self) -> Iterator[Any]:
        errors = CounterMetricFamily(
            "vocero_endpoint_errors", "Failed serving-engine requests.", labels=["stage", "status"]
        )
        in_flight = GaugeMetricFamily(
            "vocero_endpoint_in_flight", "Open serving-engine requests.", labels=["stage"]
        )
        first = GaugeMetricFamily(
            "vocero_endpoint_first_token_ms", "Time to the first streamed event.",
            labels=["stage", "quantile"],
        )
        breaker = GaugeMetricFamily(
            "vocero_endpoint_breaker_open",
            "1 while the endpoint's circuit breaker refuses requests.", labels=["stage"],
        )
        rate = GaugeMetricFamily(
            "vocero_endpoint_tokens_per_second", "Streamed tokens per second after the first.",
            labels=["stage", "quantile"],
        )
        for health in self._healths:
            for status, count in health.errors.items():
                errors.add_metric([health.stage, status], count)
            in_flight.add_metric([health.stage], health.in_flight)
            breaker.add_metric([health.stage], 1.0 if health.breaker.state == "open" else 0.0)
            for family, values in ((first, health.first_token_ms), (rate, health.tokens_per_s)):
                ordered = sorted(values)
                for q in (0.5, 0.95):
                    if ordered:
                        family.add_metric([health.stage, str(q)], percentile(ordered, q))
        yield errors
        yield in_flight
        yield breaker
        yield first
        yield rate
