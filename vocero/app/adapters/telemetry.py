"""Adapts the Prometheus registry to the small metric ports of the orchestrator and relay."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import cast

from vocero.observability import tracing
from vocero.observability.metrics import LatencyStage, Metrics

_STAGES = {
    "ttfs_ms",
    "barge_in_stop_ms",
    "llm_ttft_ms",
    "tts_ttfa_ms",
    "stt_final_ms",
    "turn_endpointing_ms",
}


class MetricsPort:
    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def observe_ms(self, name: str, value: float, **labels: str) -> None:
        if name == "tool_latency_ms":
            self.metrics.observe_tool(labels.get("tool", ""), labels.get("outcome", ""), value)
        elif name in _STAGES:
            self.metrics.observe_ms(cast(LatencyStage, name), value)

    def count(self, name: str, amount: float = 1.0, **labels: str) -> None:
        m = self.metrics
        match name:
            case "sessions":
                m.session(labels["outcome"])  # type: ignore[arg-type]
            case "denials":
                m.denial(labels.get("reason_code", ""))
            case "errors":
                m.error(labels.get("code", ""))
            case "barge_ins":
                m.barge_in()
            case "false_barge_ins":
                m.false_barge_in()
            case "generations":
                m.generation(labels.get("status", ""))
            case "frames_rejected":
                m.frame_dropped("inbound", labels.get("reason", ""))
            case "stt_speculations":
                m.stt_speculation(labels.get("outcome", ""))
            case "drafts":
                m.drafts_total.labels(
                    outcome=labels.get("outcome", ""), reason=labels.get("reason", "")
                ).inc()
            case "draft_llm_calls":
                m.draft_llm_calls_total.inc()
            case "turns_merged":
                m.turns_merged_total.inc()
            case "findings":
                m.finding(labels.get("kind", ""))
            case "units":
                m.unit(labels.get("disposition", ""), labels.get("reason_code", ""))
            case "audio_after_stop":
                m.audio_after_stop_total.inc()
            case "recorder_drops":
                m.frame_dropped("recorder", labels.get("reason", "queue_full"))

    def tool_call(self, tool: str, outcome: str, duration_ms: float) -> None:
        """The MCP gateway's observer hook."""
        self.metrics.observe_tool(tool, outcome, duration_ms)

    def gauge(self, name: str, value: float, **labels: str) -> None:
        if name == "active_sessions":
            self.metrics.active_sessions.set(value)
        elif name == "queue_depth":
            self.metrics.set_queue_depth(labels.get("link", ""), int(value))


@asynccontextmanager
async def traces(endpoint: str) -> AsyncIterator[None]:
    """Export traces over OTLP/HTTP to ``endpoint`` while the block runs (flushed at its end);
    no endpoint: the tracer installed already stays (the null one unless a test put another)."""
    if not endpoint:
        yield
        return
    with tracing.installed(tracing.otel_from_endpoint(endpoint)):
        yield
