"""Qwen3-TTS 12Hz 1.7B on the GB10: the built-in voice is a preset speaker of the CustomVoice model;
a vault voice is cloned by the Base model from its approved reference.

The built-in voice is never a clone: it is one of the CustomVoice model's own speakers
(``VOCERO_QWEN_TTS_SPEAKER``, checked against the model's list on load), so no recording of a
person is needed to run a deployment. Every cloned voice comes through the voice vault, with its
consent, approval and encryption. Each engine speaks only what it has a model for
(:meth:`QwenTtsEngine.speaks`): a vault voice without a Base model, or the built-in voice
without a CustomVoice model, is refused before a session opens with it, never swapped.

A voice clone prompt (speaker embedding, and in full ICL mode the reference's codec codes and
transcript) is built once per approved voice version and cached; :meth:`forget_voice` drops every
version of a revoked voice at once. Full ICL is the default; x-vector-only mode is used only when
the resolved :class:`VoiceRef` says the profile allows it. ``faster-qwen3-tts`` 0.3.x streams
codec chunks when it is installed; plain ``qwen-tts`` renders one spoken unit per call. Output is
24 kHz PCM16. torch and the Qwen packages are imported on load only.
"""

from __future__ import annotations

import hashlib
import io
import threading
import wave
from collections.abc import Iterator
from functools import partial
from typing import Any

import numpy as np
import structlog

from vocero.contracts.domain import VoiceRef
from vocero.contracts.errors import ErrorCode, VoceroError
from vocero.inference import threads
from vocero.inference.toolkit.audio import Float32, float_to_pcm16, resample

log = structlog.get_logger(__name__)
SAMPLE_RATE = 24_000
DEFAULT_SPEAKER = "Ryan"
"""A CustomVoice preset speaker whose native language is English."""


class QwenTtsEngine:
    def __init__(
        self,
        model_dir: str = "",
        *,
        preset_model_dir: str = "",
        speaker: str = DEFAULT_SPEAKER,
        device: str = "cuda",
        language: str = "English",
        chunk_steps: int = 4,
        streaming: bool = True,
    ) -> None:
        """``model_dir``: the Base model that clones vault voices ("": none are spoken);
        ``preset_model_dir``: the CustomVoice model whose preset ``speaker`` is the built-in
        voice ("": the built-in voice is not spoken)."""
        self.name = "tts.qwen3"
        self.sample_rate = SAMPLE_RATE
        self._model_dir = model_dir
        self._preset_dir = preset_model_dir
        self.speaker = speaker
        self._device = device
        self._language = language
        self._chunk_steps = chunk_steps
        self._want_streaming = streaming
        self._model: Any = None
        self._fast: Any = None
        self._preset: Any = None
        self._preset_fast: Any = None
        self._prompts: dict[tuple[str, str, str], Any] = {}
        self._lock = threading.Lock()

    # --------------------------------------------------------------------------- loading

    def load(self) -> None:
        if self._preset_dir and self._preset is None:
            key = ("qwen3-tts", self._preset_dir, self._device, self._want_streaming)
            preset, fast = threads.load_once(key, partial(self._create, self._preset_dir))
            _check_speaker(preset, self.speaker)
            self._preset, self._preset_fast = preset, fast
        if self._model_dir and self._model is None:
            key = ("qwen3-tts", self._model_dir, self._device, self._want_streaming)
            self._model, self._fast = threads.load_once(key, partial(self._create, self._model_dir))

    def _create(self, model_dir: str) -> tuple[Any, Any]:
        import torch

        dtype = torch.bfloat16 if self._device.startswith("cuda") else torch.float32
        log.info("tts.model_loading", model=model_dir, device=self._device)
        if self._want_streaming and self._device.startswith("cuda"):
            try:
                from faster_qwen3_tts import FasterQwen3TTS
            except ImportError:
                log.info("tts.streaming_unavailable", reason="faster-qwen3-tts not installed")
            else:
                fast = FasterQwen3TTS.from_pretrained(model_dir, device=self._device, dtype=dtype)
                return fast.model, fast
        from qwen_tts import Qwen3TTSModel

        model = Qwen3TTSModel.from_pretrained(model_dir, device_map=self._device, dtype=dtype)
        return model, None

    # ---------------------------------------------------------------------------- voices

    def speaks(self, voice: VoiceRef) -> bool:
        """The built-in voice with a CustomVoice model; a vault version (its reference) with a
        Base model. Nothing else: no voice is spoken in place of another."""
        if voice.builtin:
            return bool(self._preset_dir)
        return bool(self._model_dir and voice.ref_audio)

    def prompt_for(self, voice: VoiceRef) -> Any:
        """The cached clone prompt of one approved voice version (built on first use)."""
        if not voice.ref_audio:
            raise VoceroError("voice has no reference audio", code=ErrorCode.TTS_UNAVAILABLE)
        digest = hashlib.sha256(voice.ref_audio + voice.ref_text.encode()).hexdigest()[:16]
        key = (voice.voice_profile_id, voice.voice_version, f"{digest}:{voice.x_vector_only}")
        with self._lock:
            cached = self._prompts.get(key)
        if cached is not None:
            return cached
        prompt = self._build_prompt(voice)
        with self._lock:
            self._prompts[key] = prompt
        log.info("tts.voice_prompt_built", voice_profile_id=key[0], voice_version=key[1])
        return prompt

    def _build_prompt(self, voice: VoiceRef) -> Any:
        if self._model is None:
            self.load()
        audio, rate = decode_wav(voice.ref_audio)
        if voice.x_vector_only:
            items = self._model.create_voice_clone_prompt(
                ref_audio=(audio, rate), ref_text=None, x_vector_only_mode=True
            )
        else:
            if not voice.ref_text:
                raise VoceroError(
                    "full ICL needs the reference transcript", code=ErrorCode.TTS_UNAVAILABLE
                )
            items = self._model.create_voice_clone_prompt(
                ref_audio=(audio, rate), ref_text=voice.ref_text, x_vector_only_mode=False
            )
        return items

    def forget_voice(self, voice_profile_id: str) -> None:
        with self._lock:
            for key in [k for k in self._prompts if k[0] == voice_profile_id]:
                del self._prompts[key]
        log.info("tts.voice_forgotten", voice_profile_id=voice_profile_id)

    def cached_voices(self) -> list[tuple[str, str]]:
        with self._lock:
            return [(k[0], k[1]) for k in self._prompts]

    # ----------------------------------------------------------------------------- render

    @property
    def renders_whole_sentences(self) -> bool:
        """Without faster-qwen3-tts, qwen-tts returns a sentence's waveform whole."""
        return self._fast is None and self._preset_fast is None

    def render(self, sentence: str, voice: VoiceRef) -> Iterator[bytes]:
        if not self.speaks(voice):
            raise VoceroError(
                f"no model here speaks voice {voice.voice_profile_id}",
                code=ErrorCode.VOICE_UNAVAILABLE,
            )
        if voice.builtin:
            yield from self._render_preset(sentence)
            return
        if self._model is None:
            self.load()
        items = self.prompt_for(voice)
        if self._fast is not None:
            yield from self._render_streaming(sentence, items)
            return
        wavs, rate = self._model.generate_voice_clone(
            text=sentence, language=self._language, voice_clone_prompt=items
        )
        yield self._pcm(wavs[0], rate)

    def _render_preset(self, sentence: str) -> Iterator[bytes]:
        """The built-in voice: the CustomVoice model's preset speaker, nothing cloned."""
        if self._preset is None:
            self.load()
        if self._preset_fast is not None:
            for chunk, rate, _timing in self._preset_fast.generate_custom_voice_streaming(
                text=sentence,
                language=self._language,
                speaker=self.speaker,
                chunk_size=self._chunk_steps,
            ):
                yield self._pcm(chunk, rate)
            return
        wavs, rate = self._preset.generate_custom_voice(
            text=sentence, language=self._language, speaker=self.speaker
        )
        yield self._pcm(wavs[0], rate)

    def _render_streaming(self, sentence: str, items: Any) -> Iterator[bytes]:
        # faster-qwen3-tts 0.3 takes the qwen-tts prompt items as they are and tokenises each
        # ICL item's own ``ref_text``; a prompt *dict* would need ``ref_text=`` passed separately.
        for chunk, rate, _timing in self._fast.generate_voice_clone_streaming(
            text=sentence,
            language=self._language,
            voice_clone_prompt=items,
            chunk_size=self._chunk_steps,
        ):
            yield self._pcm(chunk, rate)

    def _pcm(self, audio: Any, rate: int) -> bytes:
        if hasattr(audio, "detach"):
            audio = audio.detach().float().cpu().numpy()
        samples: Float32 = np.asarray(audio, dtype=np.float32).reshape(-1)
        return float_to_pcm16(resample(samples, int(rate), SAMPLE_RATE))


def _check_speaker(model: Any, speaker: str) -> None:
    """The built-in voice must be one of the CustomVoice model's preset speakers."""
    listed = getattr(model, "get_supported_speakers", None)
    speakers = [str(name).lower() for name in (listed() if listed is not None else None) or []]
    if speaker.lower() not in speakers:
        raise VoceroError(
            f"VOCERO_QWEN_TTS_SPEAKER {speaker!r} is not a preset speaker of the CustomVoice "
            f"model (it has: {', '.join(sorted(speakers)) or 'none'})",
            code=ErrorCode.TTS_UNAVAILABLE,
        )


def decode_wav(data: bytes) -> tuple[Float32, int]:
    """A PCM16 WAV (what the vault stores) as float32 mono and its rate."""
    try:
        with wave.open(io.BytesIO(data)) as wav:
            if wav.getsampwidth() != 2:
                raise VoceroError(
                    "reference audio must be 16-bit PCM", code=ErrorCode.TTS_UNAVAILABLE
                )
            frames = wav.readframes(wav.getnframes())
            channels, rate = wav.getnchannels(), wav.getframerate()
    except (wave.Error, EOFError) as exc:
        raise VoceroError(
            "reference audio is not a WAV file", code=ErrorCode.TTS_UNAVAILABLE
        ) from exc
    samples = np.frombuffer(frames, dtype="<i2").astype(np.float32) / 32768.0
    if channels > 1:
        samples = samples.reshape(-1, channels).mean(axis=1)
    return samples.astype(np.float32), rate
