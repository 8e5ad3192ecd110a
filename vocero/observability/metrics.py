"""Prometheus metrics of one Vocero app, in a registry of its own.

Each :class:`Metrics` owns a ``CollectorRegistry`` (never the global one), so several apps can
live in one test process. Latencies are histograms in milliseconds named after the stages of
docs/slo.md (``vocero_ttfs_ms`` ...). Label values must come from bounded sets (tool names of a
profile, error codes, reason codes), never from caller input.

Under ``serve --workers N`` the supervisor sets ``PROMETHEUS_MULTIPROC_DIR``: every worker's
values then live in files there and :meth:`Metrics.render` answers for all workers together
(counters and histograms summed, live gauges summed over live workers).
"""

from __future__ import annotations

import os
from typing import Literal

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

LatencyStage = Literal[
    "ttfs_ms",
    "barge_in_stop_ms",
    "llm_ttft_ms",
    "tts_ttfa_ms",
    "stt_final_ms",
    "turn_endpointing_ms",
]
SessionOutcome = Literal["admitted", "rejected", "denied"]

LATENCY_STAGES: tuple[LatencyStage, ...] = (
    "ttfs_ms",
    "barge_in_stop_ms",
    "llm_ttft_ms",
    "tts_ttfa_ms",
    "stt_final_ms",
    "turn_endpointing_ms",
)
SESSION_OUTCOMES: tuple[SessionOutcome, ...] = ("admitted", "rejected", "denied")

MS_BUCKETS = (1, 2, 5, 10, 25, 50, 75, 100, 150, 200, 300, 400, 500, 750, 1000, 1500, 2500, 5000)
TOOL_MS_BUCKETS = (*MS_BUCKETS, 10000, 30000)
"""Tool calls may legitimately run to their (configurable) timeout, beyond five seconds."""

_STAGE_HELP: dict[LatencyStage, str] = {
    "ttfs_ms": "End of the caller's turn to the first audio sent back, in ms.",
    "barge_in_stop_ms": "Caller speech detected to output stopped and flushed, in ms.",
    "llm_ttft_ms": "LLM request to its first token, in ms.",
    "tts_ttfa_ms": "TTS request to its first audio chunk, in ms.",
    "stt_final_ms": "End of an utterance to its final transcript, in ms.",
    "turn_endpointing_ms": "Acoustic end of the caller's speech to the turn's commit, in ms.",
}


class Metrics:
    """Every metric Vocero exports; one instance per app."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        reg = self.registry
        self.latency: dict[LatencyStage, Histogram] = {
            stage: Histogram(
                f"vocero_{stage}", _STAGE_HELP[stage], buckets=MS_BUCKETS, registry=reg
            )
            for stage in LATENCY_STAGES
        }
        self.tool_latency_ms = Histogram(
            "vocero_tool_latency_ms",
            "Tool call dispatch to result, in ms.",
            ["tool", "outcome"],
            buckets=TOOL_MS_BUCKETS,
            registry=reg,
        )
        self.sessions_total = Counter(
            "vocero_sessions_total", "Session attempts by outcome.", ["outcome"], registry=reg
        )
        self.frames_dropped_total = Counter(
            "vocero_frames_dropped_total", "Frames dropped.", ["link", "reason"], registry=reg
        )
        self.denials_total = Counter(
            "vocero_denials_total", "Denials by reason code.", ["reason_code"], registry=reg
        )
        self.errors_total = Counter(
            "vocero_errors_total", "Errors sent to clients by code.", ["code"], registry=reg
        )
        self.barge_ins_total = Counter("vocero_barge_ins_total", "Barge-ins.", registry=reg)
        self.heap_trimmed_bytes = Counter(
            "vocero_heap_trimmed_bytes",
            "Resident bytes the periodic C heap trim gave back to the kernel (heap_trim_s).",
            registry=reg,
        )
        self.false_barge_ins_total = Counter(
            "vocero_false_barge_ins_total", "Barge-ins that were not speech.", registry=reg
        )
        self.generations_total = Counter(
            "vocero_generations_total", "Generations by final status.", ["status"], registry=reg
        )
        self.stt_speculations_total = Counter(
            "vocero_stt_speculations_total",
            "Final transcriptions started at a pause, by outcome (used, stale).",
            ["outcome"],
            registry=reg,
        )
        self.drafts_total = Counter(
            "vocero_drafts_total",
            "Prepared answers by outcome (made, used, dropped) and why one was dropped "
            "(ADR-0037).",
            ["outcome", "reason"],
            registry=reg,
        )
        self.draft_llm_calls_total = Counter(
            "vocero_draft_llm_calls_total", "Model calls made for prepared answers.", registry=reg
        )
        self.turns_merged_total = Counter(
            "vocero_turns_merged_total",
            "Caller continuations joined to the turn they took back (ADR-0037).",
            registry=reg,
        )
        self.findings_total = Counter(
            "vocero_findings_total",
            "Review findings by kind (promised_unbooked: a promise heard with no record).",
            ["kind"],
            registry=reg,
        )
        self.findings_total.labels(kind="promised_unbooked")
        self.units_total = Counter(
            "vocero_units_total",
            "Spoken units by disposition (admitted, stale, canceled, expired, refused) and reason.",
            ["disposition", "reason_code"],
            registry=reg,
        )
        self.profile_reload_failures_total = Counter(
            "vocero_profile_reload_failures_total",
            "Profile directory edits that did not load (the current revision keeps serving).",
            registry=reg,
        )
        self.profile_rollbacks_total = Counter(
            "vocero_profile_rollbacks_total", "Profile rollbacks by an operator.", registry=reg
        )
        self.audio_after_stop_total = Counter(
            "vocero_audio_after_stop_total",
            "Audio frames of a stopped generation that reached the sender (dropped there).",
            registry=reg,
        )
        self.runner_healthy = Gauge(
            "vocero_runner_healthy", "1 when a model runner reports itself ready, else 0.",
            ["runner"], registry=reg, multiprocess_mode="liveall",
        )
        self.followups_overdue = Gauge(
            "vocero_followups_overdue",
            "Follow-ups past their due time and not yet settled, by status.",
            ["status"], registry=reg, multiprocess_mode="max",
        )
        self.series = Gauge(
            "vocero_metric_series", "Series each metric family exports (label cardinality).",
            ["family"], registry=reg, multiprocess_mode="max",
        )
        self.asyncio_tasks = Gauge(
            "vocero_asyncio_tasks", "Asyncio tasks of the process's event loop (at scrape).",
            registry=reg, multiprocess_mode="liveall",
        )
        self.heap_bytes = Gauge(
            "vocero_process_heap_bytes",
            "The C allocator's heap of this process at scrape (glibc only): bytes in use, free "
            "inside its arenas (kept, not yet given back) and mapped on their own.",
            ["part"], registry=reg, multiprocess_mode="liveall",
        )
        self.event_loop_lag = Gauge(
            "vocero_event_loop_lag_seconds",
            "How long a callback scheduled at scrape waited for the event loop to run it.",
            registry=reg, multiprocess_mode="liveall",
        )
        self.active_sessions = Gauge("vocero_active_sessions", "Live sessions.", registry=reg,
                                     multiprocess_mode="livesum")
        self.queue_depth = Gauge("vocero_queue_depth", "Items queued.", ["link"], registry=reg,
                                 multiprocess_mode="livesum")
        for outcome in SESSION_OUTCOMES:
            self.sessions_total.labels(outcome=outcome)

    def observe_ms(self, stage: LatencyStage, ms: float) -> None:
        """Record one latency of a pipeline stage."""
        self.latency[stage].observe(ms)

    def observe_tool(self, tool: str, outcome: str, ms: float) -> None:
        """Record one tool call's latency; ``outcome`` is e.g. ``committed`` or an error code."""
        self.tool_latency_ms.labels(tool=tool, outcome=outcome).observe(ms)

    def session(self, outcome: SessionOutcome) -> None:
        """Count a session attempt (admitting one does not change :attr:`active_sessions`)."""
        self.sessions_total.labels(outcome=outcome).inc()

    def frame_dropped(self, link: str, reason: str) -> None:
        self.frames_dropped_total.labels(link=link, reason=reason).inc()

    def denial(self, reason_code: str) -> None:
        self.denials_total.labels(reason_code=reason_code).inc()

    def error(self, code: str) -> None:
        self.errors_total.labels(code=code).inc()

    def barge_in(self) -> None:
        """Count a generation stopped because the caller started speaking."""
        self.barge_ins_total.inc()

    def false_barge_in(self) -> None:
        """Count a barge-in later found not to be speech (it was also counted as a barge-in)."""
        self.false_barge_ins_total.inc()

    def generation(self, status: str) -> None:
        """Count a finished generation by its ``response.completed`` status."""
        self.generations_total.labels(status=status).inc()

    def unit(self, disposition: str, reason_code: str) -> None:
        """Count a spoken unit's final disposition (docs/grounding.md)."""
        self.units_total.labels(disposition=disposition, reason_code=reason_code).inc()

    def finding(self, kind: str) -> None:
        """Count a review finding (kinds are a fixed set: ``promised_unbooked``)."""
        self.findings_total.labels(kind=kind).inc()

    def stt_speculation(self, outcome: str) -> None:
        """Count a speculative final: ``used`` as the turn's transcript, or ``stale``."""
        self.stt_speculations_total.labels(outcome=outcome).inc()

    def profile_reload_failed(self) -> None:
        """Count an edit of the profile directory that failed its checks."""
        self.profile_reload_failures_total.inc()

    def set_queue_depth(self, link: str, depth: int) -> None:
        self.queue_depth.labels(link=link).set(depth)

    def _count_series(self) -> None:
        """Set :attr:`series`: how many samples each family of this process exports."""
        for family in self.registry.collect():
            if family.name != "vocero_metric_series":
                self.series.labels(family=family.name).set(len(family.samples))

    def render(self) -> tuple[bytes, str]:
        """The Prometheus text exposition and its content type, for ``GET /metrics`` (of all
        workers together in multiprocess mode)."""
        self._count_series()
        folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
        if not folder:
            return generate_latest(self.registry), CONTENT_TYPE_LATEST
        from prometheus_client import multiprocess

        merged = CollectorRegistry()
        multiprocess.MultiProcessCollector(merged, path=folder)  # type: ignore[no-untyped-call]
        return generate_latest(merged), CONTENT_TYPE_LATEST
