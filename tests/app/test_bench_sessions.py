"""``vocero bench sessions``: the load generator's pre-built envelopes are events the protocol
decoder accepts, and a short run against a real server reports every figure the issue asks for
(the WebSocket layer itself is the websockets library's sans-I/O client)."""

from __future__ import annotations

import json
from datetime import datetime

import anyio
import pytest

from vocero.bench import client as bc
from vocero.bench.sessions import default_workers, run_sessions, split
from vocero.contracts import codec
from vocero.contracts import events as ev
from vocero.inference.sim.vad import EnergyVad


def test_prebuilt_envelopes_are_valid_client_events() -> None:
    body = bc.envelope(
        b"audio.input.delta.v1",
        bc.noise_payloads()[0],
        session_id=b"ses_abc",
        sequence=7,
    )
    event = codec.decode_client(body)
    assert isinstance(event, ev.AudioInputDeltaV1)
    assert (event.data.session_id, event.data.sequence) == ("ses_abc", 7)
    assert len(event.data.payload.audio) == 640
    report = bc.envelope(
        b"output.playout_progress.v1",
        b'{"generation_id":"gen_1","played_ms":40,"buffered_ms":360}',
        session_id=b"ses_abc",
        sequence=8,
    )
    assert isinstance(codec.decode_client(report), ev.OutputPlayoutProgressV1)


def test_caller_noise_is_distinct_and_stays_under_the_vad_threshold() -> None:
    payloads = bc.noise_payloads()
    assert len(set(payloads)) == len(payloads)
    stream = EnergyVad().open()
    for payload in payloads * 10:
        event = codec.decode_client(
            bc.envelope(b"audio.input.delta.v1", payload, session_id=b"s", sequence=1)
        )
        assert isinstance(event, ev.AudioInputDeltaV1)
        assert any(event.data.payload.audio)
        assert stream.push(event.data.payload.audio) == []


def test_server_stamps_read_back_as_unix_time() -> None:
    for stamp in ["2026-11-30T10:00:00.000Z", "2026-11-30T10:00:59.999Z", codec.now_rfc3339()]:
        expected = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        assert bc.stamp_epoch(stamp) == pytest.approx(expected, abs=1e-6)


def test_sessions_spread_evenly_over_workers() -> None:
    assert split(10, 3) == [4, 3, 3]
    assert split(2, 4) == [1, 1, 0, 0]
    assert sum(split(501, 2)) == 501
    assert 1 <= default_workers(1) <= default_workers(500)


@pytest.mark.slow
def test_a_short_run_reports_every_figure() -> None:
    report = anyio.run(lambda: run_sessions(4, duration_s=1.0, workers=2))
    json.dumps(report)  # all plain JSON
    sessions = report["sessions"]
    assert sessions["connected"] == 4
    assert sessions["dropped"] == 0
    assert sessions["permessage_deflate"] == 0  # offered like a browser; the server declines
    frames = report["frames_per_s"]
    assert frames["target_each_way"] == 200
    assert frames["sent"] > 0 and frames["received"] > 0
    assert report["outbound_frame_lag_ms"]["n"] > 0
    assert {"p50", "p95", "p99"} <= set(report["outbound_frame_lag_ms"])
    assert report["errors"] == {}
    assert report["server"]["peak_rss_mb"] > 0
    assert report["server"]["cpu_s"] > 0
    assert report["server"]["cpu_us_per_message"] > 0
    for side in ("server", "generator"):  # CPU seconds over 4 sessions x about 1 s
        assert report[side]["cpu_s_per_session_minute"] == pytest.approx(
            report[side]["cpu_s"] / (4 / 60), rel=0.25, abs=0.01)
    assert report["generator"]["workers"] == 2
    assert report["generator"]["cpu_s"] > 0
    assert set(report["checks"]) == {
        "all_connected",
        "none_dropped",
        "no_errors",
        "sent_flowing",
        "received_flowing",
        "few_late_frames",
        "p95_lag",
    }
    assert report["within_limits"] == all(report["checks"].values())
    assert report["goal_met"] is False  # four sessions are not the goal's five hundred
    assert "same" in report["note"]
