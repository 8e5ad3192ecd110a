"""Where the GB10 models live. Paths come from configuration only: nothing is fetched from a hub.

| variable | what |
| --- | --- |
| ``VOCERO_PARAKEET_MODEL`` | Parakeet TDT 0.6B ``.nemo`` file |
| ``VOCERO_LLAMA_MODEL`` | Llama 3.1 8B Instruct ``.gguf`` file |
| ``VOCERO_QWEN_TTS_CUSTOM_MODEL`` | Qwen3-TTS 12Hz 1.7B CustomVoice directory: the built-in voice, one of its preset speakers (required) |
| ``VOCERO_QWEN_TTS_SPEAKER`` | that preset speaker (default ``Ryan``; checked against the model's list on load) |
| ``VOCERO_QWEN_TTS_MODEL`` | Qwen3-TTS 12Hz 1.7B Base directory (with ``speech_tokenizer/``): clones the voice vault's approved voices (optional: without it a profile's vault voice is refused with ``VOICE_UNAVAILABLE``) |
| ``VOCERO_VAD_MODEL`` | Silero VAD ONNX (default: the one bundled with faster-whisper) |
| ``VOCERO_GB10_DEVICE`` | ``cuda`` (default) or ``cpu`` for bring-up without a GPU |
"""  # noqa: E501 - a table reads better unwrapped

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from vocero.inference.gb10.tts import DEFAULT_SPEAKER
from vocero.inference.toolkit.settings import QueueSettings


@dataclass(frozen=True, slots=True)
class Gb10Settings:
    parakeet_model: str = ""
    llama_model: str = ""
    qwen_tts_model: str = ""
    """The Base model: vault voices are cloned with it ("": none are spoken here)."""
    qwen_tts_custom_model: str = ""
    """The CustomVoice model: the built-in voice is its preset :attr:`qwen_tts_speaker`."""
    qwen_tts_speaker: str = DEFAULT_SPEAKER
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
            qwen_tts_custom_model=environ.get("VOCERO_QWEN_TTS_CUSTOM_MODEL", ""),
            qwen_tts_speaker=environ.get("VOCERO_QWEN_TTS_SPEAKER", "") or DEFAULT_SPEAKER,
            vad_model=environ.get("VOCERO_VAD_MODEL", ""),
            device=environ.get("VOCERO_GB10_DEVICE", "cuda"),
        )

    def missing(self) -> list[str]:
        """The variables a GB10 deployment must set and has not."""
        required = {
            "VOCERO_PARAKEET_MODEL": self.parakeet_model,
            "VOCERO_LLAMA_MODEL": self.llama_model,
            "VOCERO_QWEN_TTS_CUSTOM_MODEL": self.qwen_tts_custom_model,
        }
        return [name for name, value in required.items() if not value]
