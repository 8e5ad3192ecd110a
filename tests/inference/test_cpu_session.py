"""Closed loop on the real CPU models: a caller's spoken question, through VAD, Whisper, the
routed SmolLM2, the orders MCP server and Piper, is answered with audio."""

from __future__ import annotations

import pytest

from vocero.bench.ttfs import run_ttfs

pytestmark = [pytest.mark.model, pytest.mark.anyio]


async def test_a_spoken_question_is_answered_with_audio_on_cpu_runners() -> None:
    report = await run_ttfs("cpu", limit=1)
    (turn,) = report["turns"]
    heard = turn["heard"].lower().replace(" ", "")
    assert "statusoforder" in heard
    assert "a123" in heard
    assert turn["tools"] == 1, "orders.status ran through the MCP gateway and committed"
    assert "shipped" in turn["reply"].lower()
    assert turn["end_of_speech_to_audio_ms"] > 0
    assert turn["server_stt_final_ms"] > 0
    assert turn["server_tts_ttfa_ms"] > 0
