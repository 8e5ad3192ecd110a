"""Tiny-model timings of the GB10 engines, cpu vs cuda: Parakeet transcribe, Qwen3-TTS first audio.

Usage: python3 .device/gb10_timing.py OUT.json [iterations]
Random tiny weights: the figures are per-call overheads of the real code paths (NeMo transcribe,
qwen-tts / faster-qwen3-tts generation and codec decoding), not model speed.
"""

from __future__ import annotations

import io
import json
import statistics
import sys
import tempfile
import time
import traceback
import wave
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tests.inference.tiny_models import QWEN_MAX_NEW_TOKENS, tiny_parakeet, tiny_qwen3_tts
from vocero.contracts.domain import VoiceRef
from vocero.inference.gb10.stt import ParakeetEngine
from vocero.inference.gb10.tts import QwenTtsEngine


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def stats(ms: list[float]) -> dict[str, Any]:
    ms = sorted(ms)
    return {
        "n": len(ms),
        "min_ms": round(ms[0], 2),
        "median_ms": round(statistics.median(ms), 2),
        "p90_ms": round(ms[int(0.9 * (len(ms) - 1))], 2),
        "max_ms": round(ms[-1], 2),
    }


def wav(seconds: float, rate: int, seed: int) -> bytes:
    noise = np.random.default_rng(seed).normal(0, 0.1, int(rate * seconds))
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes((np.clip(noise, -1, 1) * 32_767).astype("<i2").tobytes())
    return buffer.getvalue()


def parakeet(path: Path, device: str, iterations: int) -> dict[str, Any]:
    engine = ParakeetEngine(str(path), device=device)
    started = time.perf_counter()
    engine.load()
    load_s = time.perf_counter() - started
    audio = np.random.default_rng(1).normal(0, 0.1, 48_000).astype(np.float32)  # 3 s
    engine.recognise(audio, words=True)  # warm
    times = []
    for _ in range(iterations):
        sync(device)
        started = time.perf_counter()
        engine.recognise(audio, words=True)
        sync(device)
        times.append((time.perf_counter() - started) * 1000)
    return {"load_s": round(load_s, 2), "transcribe_3s_audio": stats(times)}


def qwen(
    model_dir: Path, ref: Path, device: str, streaming: bool, iterations: int
) -> dict[str, Any]:
    engine = QwenTtsEngine(str(model_dir), device=device, streaming=streaming)  # clones only
    started = time.perf_counter()
    engine.load()
    load_s = time.perf_counter() - started
    if engine._fast is not None:
        real = engine._fast.generate_voice_clone_streaming

        def capped(**kwargs: Any) -> Any:
            return real(**kwargs, max_new_tokens=QWEN_MAX_NEW_TOKENS)

        engine._fast.generate_voice_clone_streaming = capped
    acme = VoiceRef(
        voice_profile_id="vp_acme", voice_version="3", ref_audio=wav(1.0, 16_000, 3),
        ref_text="call me back",
    )
    sync(device)
    started = time.perf_counter()
    engine.prompt_for(acme)
    sync(device)
    prompt_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    list(engine.render("Ready.", acme))  # warm (captures the CUDA graphs when streaming)
    sync(device)
    first_render_s = time.perf_counter() - started
    first, total, audio_ms = [], [], []
    for _ in range(iterations):
        sync(device)
        started = time.perf_counter()
        pieces = engine.render("Call me back.", acme)
        head = next(pieces)
        first.append((time.perf_counter() - started) * 1000)
        rest = list(pieces)
        sync(device)
        total.append((time.perf_counter() - started) * 1000)
        audio_ms.append((len(head) + sum(len(p) for p in rest)) / 2 / 24)
    return {
        "streaming": engine._fast is not None,
        "load_s": round(load_s, 2),
        "clone_prompt_ms": round(prompt_ms, 1),
        "first_render_incl_capture_s": round(first_render_s, 2),
        "first_audio": stats(first),
        "sentence_total": stats(total),
        "audio_ms_median": round(statistics.median(audio_ms), 1),
        "max_new_tokens": QWEN_MAX_NEW_TOKENS,
    }


def main() -> None:
    out = Path(sys.argv[1])
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    result: dict[str, Any] = {
        "torch": torch.__version__,
        "cuda": torch.cuda.is_available(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "cpu_threads": torch.get_num_threads(),
        "iterations": iterations,
    }
    devices = ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "p").mkdir()
        (root / "q").mkdir()
        nemo = tiny_parakeet(root / "p")
        model_dir = tiny_qwen3_tts(root / "q")
        ref = root / "ref.wav"
        ref.write_bytes(wav(1.0, 24_000, 0))
        runs: list[tuple[str, Any]] = [(f"parakeet_{d}", lambda d=d: parakeet(nemo, d, iterations))
                                       for d in devices]
        runs += [(f"qwen3_tts_{d}_plain", lambda d=d: qwen(model_dir, ref, d, False, iterations))
                 for d in devices]
        if "cuda" in devices:
            runs.append(("qwen3_tts_cuda_faster_graphs",
                         lambda: qwen(model_dir, ref, "cuda", True, iterations)))
        for name, run in runs:
            torch.manual_seed(0)
            try:
                result[name] = run()
            except Exception as exc:  # one failing engine does not hide the others' figures
                traceback.print_exc()
                result[name] = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
            print(name, json.dumps(result[name]), flush=True)
            out.write_text(json.dumps(result, indent=2))
    if torch.cuda.is_available():
        allocated = torch.cuda.max_memory_allocated() / 2**20
        result["cuda_max_memory_allocated_mib"] = round(allocated, 1)
        result["cuda_max_memory_reserved_mib"] = round(torch.cuda.max_memory_reserved() / 2**20, 1)
    out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
