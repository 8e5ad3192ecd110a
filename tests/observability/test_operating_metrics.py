"""The metrics the alert rules added (issue 32), counted where the event happens."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from vocero.app.settings import Settings
from vocero.contracts.events import AudioOut
from vocero.observability.metrics import Metrics
from vocero.orchestrator.output import OutFrame, OutputChannel
from vocero.store.engine import Store
from vocero.store.models import FollowupRow


def audio(generation_id: str, index: int) -> OutFrame:
    payload = AudioOut(generation_id=generation_id, unit_id="u1", chunk_index=index,
                       audio=b"\0\0" * 160, sample_rate=16000)
    return OutFrame(payload=payload, generation_id=generation_id, audio_ms=10.0)


@pytest.mark.anyio
async def test_audio_of_a_stopped_generation_is_counted_and_never_sent() -> None:
    late: list[str] = []
    out = OutputChannel(playout_acks=True, on_after_stop=lambda: late.append("after_stop"))
    assert await out.data(audio("gen_a", 0))
    out.stop_generation("gen_a")
    out._data.append(audio("gen_a", 1))  # a frame that slipped past the stop (never expected)
    assert await out.data(audio("gen_b", 0))
    sent = await out.receive()
    assert sent is not None and sent.generation_id == "gen_b"
    assert late == ["after_stop"]


def test_series_per_family_are_exported() -> None:
    metrics = Metrics()
    for tool in ("a.one", "b.two", "c.three"):
        metrics.observe_tool(tool, "ok", 5.0)
    body = metrics.render()[0].decode()
    buckets = next(line for line in body.splitlines()
                   if line.startswith('vocero_metric_series{family="vocero_tool_latency_ms"}'))
    assert float(buckets.split()[-1]) >= 3 * 20  # three tools' buckets, counts and sums


@pytest.mark.process
def test_scrape_reports_runner_health_and_overdue_followups(
    sim_settings: Settings, tmp_path: Path
) -> None:
    from vocero.app.server import create_app

    with TestClient(create_app(sim_settings)) as client:
        runtime = client.app.state.runtime  # type: ignore[attr-defined]
        now = datetime.now(UTC)
        rows = [("f1", "scheduled", now - timedelta(hours=1)),
                ("f2", "awaiting_approval", now - timedelta(minutes=5)),
                ("f3", "scheduled", now + timedelta(hours=2)),
                ("f4", "placed", now - timedelta(hours=3))]
        client.portal.call(_insert, runtime.store, rows)  # type: ignore[union-attr]
        client.get("/readyz")
        body = client.get("/metrics").text
    assert 'vocero_followups_overdue{status="scheduled"} 1.0' in body
    assert 'vocero_followups_overdue{status="awaiting_approval"} 1.0' in body
    assert 'vocero_followups_overdue{status="retry"} 0.0' in body
    assert 'vocero_runner_healthy{runner="tts"} 1.0' in body


async def _insert(store: Store, rows: list[tuple[str, str, datetime]]) -> None:
    async with store.write() as session:
        for followup_id, status, due in rows:
            session.add(FollowupRow(**_followup(followup_id, status, due)))


def _followup(followup_id: str, status: str, due: datetime) -> dict[str, object]:
    values: dict[str, object] = {
        "id": followup_id, "session_id": None, "promised_at": due, "tenant_id": "acme",
        "subject_ref": "sub_x",
        "profile_id": "demo", "profile_version": "1", "when_text": "in an hour",
        "due_at": due, "timezone": "UTC", "channel": "phone", "reason": "call back",
        "status": status, "attempts": 0, "outcome_reason": "", "created_at": due,
        "updated_at": due, "attempt_operation_id": None, "operation_id": None,
    }
    return values
