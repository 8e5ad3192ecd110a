"""Closed loop on the real CPU models: a caller's spoken question, through VAD, Whisper, the
routed SmolLM2, the orders MCP server and Piper, is answered with audio."""

from __future__ import annotations

import re

import pytest

from vocero.bench.halves import HALVES, agent_lines
from vocero.bench.ttfs import run_ttfs
from vocero.inference.cpu.settings import CpuSettings, llm_model_path
from vocero.inference.toolkit.turn_words import SmolWordsEngine

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


async def test_the_development_set_is_spoken_after_the_agent_s_line_read_as_its_answer() -> None:
    report = await run_ttfs("cpu", limit=1, halves=("dev",))
    dev = report["halves"]["dev"]
    assert dev["in_context"] == 2  # its first complete and first paused clip
    (clip,) = dev["complete"]["clips_detail"]
    said = agent_lines(HALVES["dev"])[clip["text"]]
    assert clip["agent_said"] == said
    # The words model read what the recogniser heard as the answer to that line: its reading
    # is the one after the line, not after the opening line a first message is read after.
    read = [re.match(r"\S+ ms ('.*'|\".*\")(?: \(\S+\))?: \S+(?: finished)? w(\S+),", v)
            for v in clip["verdicts"]]
    heard, probability = next((m.group(1)[1:-1], float(m.group(2))) for m in read if m)
    words = SmolWordsEngine(llm_model_path(CpuSettings.from_env({})))
    # (the trace rounds it to three decimals)
    assert probability == pytest.approx(words.end_probability(heard, said), abs=0.0006)
    assert probability != pytest.approx(words.end_probability(heard), abs=0.0006)
