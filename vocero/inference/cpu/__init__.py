"""The embedded CPU runner set: Silero VAD, Whisper tiny.en, SmolLM2-135M behind rules, Piper.

Everything installs from PyPI and runs on two cores with no download (see ``settings``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from vocero.contracts.errors import ConfigError
from vocero.inference.cpu.llama import LlamaEngine
from vocero.inference.cpu.llm import RoutedLlm
from vocero.inference.cpu.settings import (
    CpuSettings,
    llm_model_path,
    stt_model_path,
    tts_model_paths,
    vad_model_path,
)
from vocero.inference.cpu.stt import SpeechToText, WhisperEngine
from vocero.inference.cpu.tts import PiperEngine, TextToSpeech
from vocero.inference.cpu.turn import EndOfTurnJudge, SmartTurnEngine, turn_model_path
from vocero.inference.cpu.vad import SileroVad
from vocero.inference.runner_set import RunnerSet

__all__ = ["CpuSettings", "build_cpu_runners"]


def build_cpu_runners(
    settings: CpuSettings | None = None, *, today: Callable[[], dt.date] = dt.date.today
) -> RunnerSet:
    """Resolve every model path now (a missing model fails here, not mid-call); load nothing
    until :meth:`RunnerSet.warm_up`. Weights are shared per process, so building twice is cheap."""
    settings = settings or CpuSettings.from_env()
    if settings.free_text not in ("grounded", "model"):
        raise ConfigError("environment", "VOCERO_CPU_FREE_TEXT", "must be grounded or model")
    threads = settings.cpu_threads()
    tts_model, tts_config = tts_model_paths(settings)
    vad = SileroVad(vad_model_path(settings))
    vad.load()  # 2 MB of ONNX: cheap, and no session ever pays for it
    engine = LlamaEngine(
        llm_model_path(settings), n_ctx=settings.llm_context, threads_count=threads
    )
    return RunnerSet(
        kind="cpu",
        vad=vad,
        stt=SpeechToText(
            WhisperEngine(stt_model_path(settings), threads=threads),
            settings.stt,
            partial_interval_ms=settings.stt_partial_ms,
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
        turn=EndOfTurnJudge(SmartTurnEngine(turn_model_path(), threads=threads)),
    )
