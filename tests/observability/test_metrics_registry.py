"""``Metrics``: its own registry, SPEC §3 stage names, and Prometheus text rendering."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from tests.support.metric_samples import rendered_samples
from vocero.observability.metrics import LATENCY_STAGES, Metrics

SPEC_STAGES = [
    "ttfs_ms",
    "barge_in_stop_ms",
    "llm_ttft_ms",
    "tts_ttfa_ms",
    "stt_final_ms",
    "turn_endpointing_ms",  # seed 004 §12.1: acoustic endpoint to turn commit (issue #13)
]


def test_render_is_prometheus_text_with_every_spec_stage() -> None:
    body, content_type = Metrics().render()
    text = body.decode()
    assert content_type.startswith("text/plain")
    for stage in [*SPEC_STAGES, "tool_latency_ms"]:
        assert f"vocero_{stage}" in text
    for name in ["sessions_total", "denials_total", "frames_dropped_total", "active_sessions"]:
        assert f"# TYPE vocero_{name.removesuffix('_total')}" in text


def test_stage_names_cover_the_spec() -> None:
    assert sorted(LATENCY_STAGES) == sorted(SPEC_STAGES)


def test_many_apps_in_one_process_do_not_collide() -> None:
    first, second = Metrics(), Metrics()
    first.observe_ms("ttfs_ms", 120)
    assert rendered_samples(first)[("vocero_ttfs_ms_count", ())] == 1
    assert rendered_samples(second)[("vocero_ttfs_ms_count", ())] == 0
    assert REGISTRY.get_sample_value("vocero_ttfs_ms_count") is None


@pytest.mark.parametrize("stage", SPEC_STAGES)
def test_latencies_land_in_millisecond_buckets(stage: str) -> None:
    metrics = Metrics()
    metrics.observe_ms(stage, 180)  # type: ignore[arg-type]
    samples = rendered_samples(metrics)
    assert samples[(f"vocero_{stage}_bucket", (("le", "150.0"),))] == 0
    assert samples[(f"vocero_{stage}_bucket", (("le", "200.0"),))] == 1
    assert samples[(f"vocero_{stage}_sum", ())] == 180


def test_tool_latency_is_labelled_by_tool_and_outcome() -> None:
    metrics = Metrics()
    metrics.observe_tool("orders.status", "committed", 42)
    metrics.observe_tool("orders.status", "MCP_TOOL_TIMEOUT", 3000)
    samples = rendered_samples(metrics)
    key = (("outcome", "committed"), ("tool", "orders.status"))
    assert samples[("vocero_tool_latency_ms_count", key)] == 1
    slow = (("le", "5000.0"), ("outcome", "MCP_TOOL_TIMEOUT"), ("tool", "orders.status"))
    assert samples[("vocero_tool_latency_ms_bucket", slow)] == 1


def test_counters_and_gauges() -> None:
    metrics = Metrics()
    metrics.session("admitted")
    metrics.session("denied")
    metrics.denial("PROFILE_DENIED")
    metrics.error("RATE_LIMITED")
    metrics.frame_dropped("client_out", "queue_full")
    metrics.barge_in()
    metrics.barge_in()
    metrics.false_barge_in()
    metrics.generation("interrupted")
    metrics.active_sessions.inc()
    metrics.set_queue_depth("client_out", 3)
    samples = rendered_samples(metrics)
    assert samples[("vocero_sessions_total", (("outcome", "admitted"),))] == 1
    assert samples[("vocero_sessions_total", (("outcome", "rejected"),))] == 0
    assert samples[("vocero_denials_total", (("reason_code", "PROFILE_DENIED"),))] == 1
    assert samples[("vocero_errors_total", (("code", "RATE_LIMITED"),))] == 1
    dropped = (("link", "client_out"), ("reason", "queue_full"))
    assert samples[("vocero_frames_dropped_total", dropped)] == 1
    assert samples[("vocero_barge_ins_total", ())] == 2
    assert samples[("vocero_false_barge_ins_total", ())] == 1
    assert samples[("vocero_generations_total", (("status", "interrupted"),))] == 1
    assert samples[("vocero_active_sessions", ())] == 1
    assert samples[("vocero_queue_depth", (("link", "client_out"),))] == 3
