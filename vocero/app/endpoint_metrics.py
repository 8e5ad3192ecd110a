"""Per-stage metrics of the serving engines (docs/deployment.md "Faults"), read at scrape time
from each remote runner's :class:`~vocero.inference.remote.endpoint.EndpointHealth`:
``vocero_endpoint_errors_total{stage,status}``, ``vocero_endpoint_in_flight{stage}`` and
``vocero_endpoint_first_token_ms{stage,quantile}`` (LLM: time to the first streamed event, over
the last 256 requests)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from vocero.inference.remote.endpoint import EndpointHealth
from vocero.inference.runner_set import RunnerSet


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
        for health in self._healths:
            for status, count in health.errors.items():
                errors.add_metric([health.stage, status], count)
            in_flight.add_metric([health.stage], health.in_flight)
            times = sorted(health.first_token_ms)
            for q in (0.5, 0.95):
                if times:
                    first.add_metric([health.stage, str(q)],
                                     times[min(len(times) - 1, int(q * len(times)))])
        yield errors
        yield in_flight
        yield first
