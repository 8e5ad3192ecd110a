"""The GB10 runner set: Silero VAD, Parakeet TDT 0.6B, Llama 3.1 8B Instruct, Qwen3-TTS 1.7B
(CustomVoice for the built-in preset voice, Base for the vault's cloned voices).

Install with ``pip install -e ".[gb10]"`` and llama-cpp-python built with ``-DGGML_CUDA=on``;
point the settings at local model files (see ``settings``). Heavy imports happen on warm-up, so
this package imports on any machine.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from vocero.contracts.errors import ConfigError
from vocero.inference.gb10.llm import Llama31Llm
from vocero.inference.gb10.settings import Gb10Settings
from vocero.inference.gb10.stt import ParakeetEngine
from vocero.inference.gb10.tts import QwenTtsEngine
from vocero.inference.runner_set import RunnerSet
from vocero.inference.toolkit.llama import LlamaEngine
from vocero.inference.toolkit.settings import ModelNotFoundError
from vocero.inference.toolkit.stt import SpeechToText
from vocero.inference.toolkit.tts import TextToSpeech
from vocero.inference.toolkit.turn import EndOfTurnJudge, SmartTurnEngine, turn_model_path
from vocero.inference.toolkit.turn_words import SmolWordsEngine, words_model_path
from vocero.inference.toolkit.vad import SileroVad, silero_model_path

__all__ = ["Gb10Settings", "build_gb10_runners"]


def build_gb10_runners(
    settings: Gb10Settings | None = None, *, today: Callable[[], dt.date] = dt.date.today
) -> RunnerSet:
    """Check the configuration now; load the models on :meth:`RunnerSet.warm_up`."""
    settings = settings or Gb10Settings.from_env()
    missing = settings.missing()
    if missing:
        raise ConfigError("environment", ", ".join(missing), "must name local model files")
    gpu_layers = -1 if settings.device.startswith("cuda") else 0
    llama = LlamaEngine(
        settings.llama_model,
        n_ctx=settings.llm_context,
        chat_format="llama-3",
        n_gpu_layers=gpu_layers,
    )
    qwen = QwenTtsEngine(
        settings.qwen_tts_model,
        preset_model_dir=settings.qwen_tts_custom_model,
        speaker=settings.qwen_tts_speaker,
        device=settings.device,
        language=settings.language,
        chunk_steps=settings.stream_chunk_steps,
    )
    return RunnerSet(
        kind="gb10",
        vad=SileroVad(silero_model_path(settings.vad_model)),
        stt=SpeechToText(
            ParakeetEngine(settings.parakeet_model, device=settings.device), settings.stt
        ),
        llm=Llama31Llm(llama, settings.llm, today=today),
        tts=TextToSpeech(qwen, settings.tts),
        turn=_turn_judge(),
    )


def _turn_judge() -> EndOfTurnJudge | None:
    """The CPU end-of-turn judge (Smart Turn, a few tens of ms a pause; the GPU stays with the
    big models); without its model file, turns end after the VAD's fixed silence."""
    try:
        path = turn_model_path()
    except ModelNotFoundError:
        return None
    words = words_model_path()  # SmolLM2 on the CPU reads the words, when it is installed
    return EndOfTurnJudge(
        SmartTurnEngine(path, threads=2),
        words=SmolWordsEngine(words, n_threads=2) if words else None,
    )
