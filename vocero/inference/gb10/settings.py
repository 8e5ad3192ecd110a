"""Where the GB10 models live. Paths come from configuration only: nothing is fetched from a hub.

| variable | what |
| --- | --- |
| ``VOCERO_PARAKEET_MODEL`` | Parakeet TDT 0.6B ``.nemo`` file |
| ``VOCERO_LLAMA_MODEL`` | Llama 3.1 8B Instruct ``.gguf`` file |
| ``VOCERO_QWEN_TTS_MODEL`` | Qwen3-TTS 12Hz 1.7B Base directory (with ``speech_tokenizer/``) |
| ``VOCERO_DEFAULT_VOICE_AUDIO``, ``VOCERO_DEFAULT_VOICE_TEXT`` | the built-in voice: a licensed reference WAV and its exact transcript (Qwen3-TTS Base only speaks cloned voices) |
| ``VOCERO_VAD_MODEL`` | Silero VAD ONNX (default: the one bundled with faster-whisper) |
| ``VOCERO_GB10_DEVICE`` | ``cuda`` (default) or ``cpu`` for bring-up without a GPU |
"""  # noqa: E501 - a table reads better unwrapped

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from vocero.inference.cpu.settings import QueueSettings


@dataclass(frozen=True, slots=True)
class Gb10Settings:
    parakeet_model: str = ""
    llama_model: str = ""
    qwen_tts_model: str = ""
    default_voice_audio: str = ""
    default_voice_text: str = ""
    vad_model: str = ""
    device: str = "cuda"
    language: str = "English"
    llm_context: int = 8192
    stream_chunk_steps: int = 4
    """faster-qwen3-tts codec steps per streamed chunk (12 steps = 1 s of audio)."""
    stt: QueueSettings = field(default_factory=lambda: QueueSettings(capacity=1, max_queue=8))
    llm: QueueSettings = field(default_factory=lambda: QueueSettings(max_queue=8, deadline_s=3.0))
    tts: QueueSettings = field(default_factory=lambda: QueueSettings(capacity=1, max_queue=8))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Gb10Settings:
        return cls(
            parakeet_model=environ.get("VOCERO_PARAKEET_MODEL", ""),
            llama_model=environ.get("VOCERO_LLAMA_MODEL", ""),
            qwen_tts_model=environ.get("VOCERO_QWEN_TTS_MODEL", ""),
            default_voice_audio=environ.get("VOCERO_DEFAULT_VOICE_AUDIO", ""),
            default_voice_text=environ.get("VOCERO_DEFAULT_VOICE_TEXT", ""),
            vad_model=environ.get("VOCERO_VAD_MODEL", ""),
            device=environ.get("VOCERO_GB10_DEVICE", "cuda"),
        )

    def missing(self) -> list[str]:
        """The variables a GB10 deployment must set and has not."""
        required = {
            "VOCERO_PARAKEET_MODEL": self.parakeet_model,
            "VOCERO_LLAMA_MODEL": self.llama_model,
            "VOCERO_QWEN_TTS_MODEL": self.qwen_tts_model,
            "VOCERO_DEFAULT_VOICE_AUDIO": self.default_voice_audio,
            "VOCERO_DEFAULT_VOICE_TEXT": self.default_voice_text,
        }
        return [name for name, value in required.items() if not value]
