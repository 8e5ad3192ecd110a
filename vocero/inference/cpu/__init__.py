"""The embedded CPU runner set: Silero VAD, Whisper tiny.en, SmolLM2-135M behind rules, Piper;
Smart Turn with SmolLM2 reading the words for the end of a turn.

Everything installs from PyPI and runs on two cores with no download (see ``settings``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from vocero.contracts.errors import ConfigError
from vocero.inference.cpu.pins import check_pins
from vocero.inference.cpu.settings import (
    CpuSettings,
    llm_model_path,
    stt_model_path,
    tts_model_paths,
    vad_model_path,
)
from vocero.inference.cpu.stt import WhisperEngine
from vocero.inference.cpu.tts import PiperEngine
from vocero.inference.runner_set import RunnerSet
from vocero.inference.toolkit.llama import LlamaEngine
from vocero.inference.toolkit.llm import RoutedLlm
from vocero.inference.toolkit.stt import SpeechToText
from vocero.inference.toolkit.tts import TextToSpeech
from vocero.inference.toolkit.turn import EndOfTurnJudge, SmartTurnEngine, turn_model_path
from vocero.inference.toolkit.turn_words import SmolWordsEngine, words_model_path
from vocero.inference.toolkit.vad import SileroVad

__all__ = ["CpuSettings", "build_cpu_runners", "check_pins", "model_paths"]


def build_cpu_runners(
    settings: CpuSettings | None = None, *, today: Callable[[], dt.date] = dt.date.today
) -> RunnerSet:
    """Resolve every model path now (a missing model fails here, not mid-call); load nothing
    until :meth:`RunnerSet.warm_up`. Weights are shared per process, so building twice is cheap."""
    settings = settings or CpuSettings.from_env()
    if settings.free_text not in ("grounded", "model"):
        raise ConfigError("environment", "VOCERO_CPU_FREE_TEXT", "must be grounded or model")
    threads = settings.cpu_threads()
    paths = model_paths(settings)
    check_pins(paths)  # a changed or unpinned model refuses to start (pins.py)
    tts_model, tts_config = paths["tts"], paths["tts_config"]
    words_path = words_model_path(paths["llm"])
    words = SmolWordsEngine(words_path, n_threads=threads) if words_path else None
    vad = SileroVad(paths["vad"])
    vad.load()  # 2 MB of ONNX: cheap, and no session ever pays for it
    engine = LlamaEngine(
        paths["llm"], n_ctx=settings.llm_context, threads_count=threads
    )
    return RunnerSet(
        kind="cpu",
        vad=vad,
        stt=SpeechToText(
            WhisperEngine(paths["stt"], threads=threads),
            settings.stt,
            partial_interval_ms=settings.stt_partial_ms,
            final_words=False,
        ),
        llm=RoutedLlm(
            engine,
            settings.llm,
            today=today,
            free_text="model" if settings.free_text == "model" else "grounded",
        ),
        tts=TextToSpeech(
            PiperEngine(tts_model, tts_config, allow_voice_fallback=settings.allow_voice_fallback),
            settings.tts,
        ),
        turn=EndOfTurnJudge(SmartTurnEngine(paths["turn"], threads=threads), words=words),
    )


def model_paths(settings: CpuSettings) -> dict[str, str]:
    """Every model file (or directory) the CPU runners load, by role; resolving fails here."""
    tts_model, tts_config = tts_model_paths(settings)
    return {
        "stt": stt_model_path(settings), "vad": vad_model_path(settings),
        "llm": llm_model_path(settings), "tts": tts_model, "tts_config": tts_config,
        "turn": turn_model_path(),
    }
