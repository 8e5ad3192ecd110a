"""``vocero bench client``: the client's frames are events the protocol decoder accepts, the
frame reader takes a real server envelope, the comparison with the peer and the goals are read
as the issue states them, and a short run against a real server measures both figures."""

from __future__ import annotations

import json

import anyio
import pytest

from vocero.bench import wire_cost as wc
from vocero.contracts import codec
from vocero.contracts import events as ev


def test_client_frames_are_valid_client_events() -> None:
    frame = wc.client_frame("input.text.v1", {"text": "turn 3 short"}, session_id="ses_a",
                            sequence=4)  # fmt: skip
    event = codec.decode_client(frame)
    assert isinstance(event, ev.InputTextV1)
    assert (event.data.sequence, event.data.payload.text) == (4, "turn 3 short")
    barge = codec.decode_client(wc.client_frame("input.speech_started.v1", {},
                                                session_id="ses_a", sequence=5))  # fmt: skip
    assert isinstance(barge, ev.InputSpeechStartedV1)


def test_the_reader_decodes_a_server_audio_frame_as_a_player_would() -> None:
    payload = ev.AudioOut(generation_id="gen_1", unit_id="unt_1", chunk_index=0,
                          audio=b"\x01\x02" * 80, sample_rate=16000)  # fmt: skip
    text = codec.encode(codec.server_envelope(payload, session_id="ses_a", sequence=9))
    frame = wc.decode_frame(text)
    assert frame.type == wc.AUDIO
    assert frame.data.payload.generation_id == "gen_1"
    assert frame.data.payload.audio == b"\x01\x02" * 80


def test_ratios_and_goals_read_the_peer_report() -> None:
    vocero = {"overhead_ms": {"p50": 1.0, "p95": 2.0}, "barge_in_ms": {"p50": 0.5, "p95": 1.0},
              "stale_frames": 0}  # fmt: skip
    peer = {"overhead": {"p50_ms": 4.0, "p95_ms": 8.0},
            "barge_in": {"flush_msg_ms": {"p50_ms": 2.0, "p95_ms": 4.0}, "stale_frames_mean": 1}}
    versus = wc.compare(vocero, peer)
    assert versus["ratio_overhead_p95"] == 0.25
    assert versus["ratio_barge_in_p95"] == 0.25
    assert all(wc.goals(vocero, versus).values())
    slow = vocero | {"overhead_ms": {"p50": 3.0, "p95": 3.5}, "stale_frames": 1}
    checks = wc.goals(slow, wc.compare(slow, peer))
    assert not checks["overhead_p95"] and not checks["no_stale_frames"]
    assert checks["overhead_p95_vs_pipecat"] is False  # 3.5 ms against 8: 44 %


@pytest.mark.slow
@pytest.mark.process
def test_a_short_run_against_a_real_server_measures_both_figures() -> None:
    report = anyio.run(lambda: wc.run_vocero(2, 1, warmup=(1, 0)))
    json.dumps(report)
    assert report["overhead_ms"]["n"] == 2
    assert report["barge_in_ms"]["n"] == 1
    assert report["stale_frames"] == 0
    assert 0 < report["overhead_ms"]["p50"] < 1000
