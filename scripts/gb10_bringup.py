"""Bring-up check and per-stage latency measurement for a runner set.

On the GB10 (after ``pip install -e ".[gb10]"`` and the checklist in docs/gb10.md):

    python scripts/gb10_bringup.py --runners gb10 --json var/gb10_bringup.json

It also measures the embedded CPU set (``--runners cpu``), which is how the figures in the
issue report were taken. Stages, each over the spoken requests of fixtures/llm_corpus.yaml:

- ``warm_up_s``: per runner, load plus one tiny inference;
- ``tts_ttfa_ms`` / ``tts_rtf``: text to first audio chunk, synthesis time over audio time;
- ``vad_rtf``: VAD time over audio time, 20 ms frames;
- ``stt_final_ms`` and ``wer``: the TTS output resampled to 16 kHz, transcribed whole;
- ``llm_first_output_ms``: request to the first tool intent or text chunk, and tool accuracy;
- ``ttfs_estimate_ms``: stt_final + llm_first_output + tts_ttfa (no network, no endpointing).

Prints one JSON document; exits 1 when a runner fails to warm up.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import time
from contextlib import aclosing
from pathlib import Path
from typing import Any

import msgspec
import yaml

from vocero.contracts.domain import DEFAULT_VOICE, ToolDefinition
from vocero.contracts.ports import LlmRequest, Message, TextChunk, ToolIntent
from vocero.inference.runner_set import RunnerSet
from vocero.inference.toolkit.audio import float_to_pcm16, pcm16_to_float, resample

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "llm_corpus.yaml"


def build(kind: str) -> RunnerSet:
    if kind == "gb10":
        from vocero.inference.gb10 import build_gb10_runners

        return build_gb10_runners()
    from vocero.inference.cpu import build_cpu_runners

    return build_cpu_runners()


async def warm(runners: RunnerSet) -> dict[str, float]:
    took: dict[str, float] = {}
    for name in ("stt", "llm", "tts"):
        started = time.perf_counter()
        await getattr(runners, name).warm_up()
        took[name] = round(time.perf_counter() - started, 2)
    return took


async def speak(runners: RunnerSet, text: str) -> tuple[bytes, float, float]:
    started, first = time.perf_counter(), 0.0
    pcm = b""
    async with aclosing(runners.tts.synthesize(text, DEFAULT_VOICE)) as audio:  # type: ignore[type-var]
        async for chunk in audio:
            first = first or time.perf_counter() - started
            pcm += chunk
    return pcm, first, time.perf_counter() - started


async def first_output(
    runners: RunnerSet, text: str, tools: list[ToolDefinition]
) -> tuple[float, Any]:
    request = LlmRequest(messages=[Message(role="user", content=text)], tools=tools, max_words=30)
    started = time.perf_counter()
    async with aclosing(runners.llm.generate(request)) as outputs:  # type: ignore[type-var]
        async for output in outputs:
            return time.perf_counter() - started, output
    return time.perf_counter() - started, None


def words(text: str) -> list[str]:
    """Lower case, no punctuation, "p.m." as "pm", "A-123" and "A 123" as "a123", "5,582" as
    "5582": spellings a recogniser may choose, not errors."""
    text = text.lower().replace("\u2019", "'")
    text = re.sub(r"\b([ap])\.\s?m\.", r"\1m", text)
    text = re.sub(r"(\d),(\d{3})", r"\1\2", text)
    text = re.sub(r"\b([a-z]{1,3})[-\s](\d)", r"\1\2", text)
    text = re.sub(r"(\d)\s?([ap]m)\b", r"\1 \2", text)
    return re.sub(r"[^\w\s']", " ", text).split()


def edit_distance(a: list[str], b: list[str]) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
    return row[len(b)]


async def measure(kind: str, limit: int) -> dict[str, Any]:
    corpus = yaml.safe_load(CORPUS.read_text())
    tools = [msgspec.convert(t, ToolDefinition) for t in corpus["tools"]]
    requests = corpus["requests"][:limit]
    runners = build(kind)
    report: dict[str, Any] = {"runners": kind, "warm_up_s": await warm(runners)}
    ttfa, rtf, vad_rtf, stt_ms, llm_ms, errors, total, correct = [], [], [], [], [], 0, 0, 0
    for item in requests:
        pcm, first, took = await speak(runners, item["text"])
        seconds = len(pcm) / 2 / runners.tts.sample_rate
        ttfa.append(first * 1000)
        rtf.append(took / seconds)
        audio = float_to_pcm16(resample(pcm16_to_float(pcm), runners.tts.sample_rate, 16_000))
        stream, started = runners.vad.open(), time.perf_counter()
        for i in range(0, len(audio), 640):
            stream.push(audio[i : i + 640])
        vad_rtf.append((time.perf_counter() - started) / seconds)
        started = time.perf_counter()
        heard = await runners.stt.transcribe(audio, sample_rate=16_000, locale="en-US")
        stt_ms.append((time.perf_counter() - started) * 1000)
        reference = words(item["text"])
        errors, total = errors + edit_distance(reference, words(heard.text)), total + len(reference)
        took_llm, output = await first_output(runners, item["text"], tools)
        llm_ms.append(took_llm * 1000)
        expected = item.get("tool")
        correct += (
            isinstance(output, ToolIntent) and output.name == expected
            if expected
            else isinstance(output, TextChunk)
        )
    report.update(
        utterances=len(requests),
        tts_ttfa_ms=_summary(ttfa),
        tts_rtf=_summary(rtf, 3),
        vad_rtf=_summary(vad_rtf, 4),
        stt_final_ms=_summary(stt_ms),
        wer=round(errors / max(total, 1), 4),
        llm_first_output_ms=_summary(llm_ms),
        llm_tool_choice_accuracy=round(correct / max(len(requests), 1), 4),
        ttfs_estimate_ms=round(
            statistics.median(stt_ms) + statistics.median(llm_ms) + statistics.median(ttfa)
        ),
    )
    return report


def _summary(values: list[float], digits: int = 0) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50": round(statistics.median(ordered), digits), "p95": round(p95, digits)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runners", choices=["cpu", "gb10"], default="gb10")
    parser.add_argument("--limit", type=int, default=1000, help="at most this many requests")
    parser.add_argument("--json", help="also write the report to this file")
    args = parser.parse_args()
    try:
        report = asyncio.run(measure(args.runners, args.limit))
    except Exception as exc:  # a bring-up script reports any failure plainly
        print(json.dumps({"runners": args.runners, "error": f"{type(exc).__name__}: {exc}"}))
        return 1
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
