"""GB10 runners: prompt format, grammar, parsing and voice caching on scripted fakes; the real
loading code on tiny random models when the ``gb10`` extra is installed."""

from __future__ import annotations

import datetime as dt
import io
import json
import wave
from collections.abc import Iterator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from tests.inference import corpus
from vocero.contracts.domain import DEFAULT_VOICE, ToolDefinition, VoiceRef
from vocero.contracts.errors import ConfigError, ErrorCode, VoceroError
from vocero.contracts.ports import LlmRequest, Message, TextChunk, ToolIntent
from vocero.inference import threads
from vocero.inference.gb10 import Gb10Settings, build_gb10_runners
from vocero.inference.gb10.llm import Llama31Llm, llama31_prompt, parse_call, reply_or_call_grammar
from vocero.inference.gb10.stt import ParakeetEngine
from vocero.inference.gb10.tts import QwenTtsEngine, decode_wav
from vocero.inference.toolkit.llama import LlamaEngine
from vocero.inference.toolkit.settings import QueueSettings
from vocero.inference.toolkit.stt import SpeechToText

TODAY = dt.date(2026, 3, 2)


def wav_bytes(seconds: float = 0.5, rate: int = 16_000) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        tone = 0.3 * np.sin(np.arange(int(rate * seconds)) * 2 * np.pi * 220 / rate)
        out.writeframes((tone * 32767).astype("<i2").tobytes())
    return buffer.getvalue()


# ---------------------------------------------------------------------------- Llama 3.1


def test_llama31_prompt_uses_the_native_format() -> None:
    request = LlmRequest(
        messages=[
            Message(role="system", content="You are Acme's assistant."),
            Message(role="user", content="Status of order A123?"),
            Message(role="assistant", content='{"name": "orders.status"}'),
            Message(role="tool", content="", tool_name="orders.status", tool_result={"s": "ok"}),
        ],
        tools=corpus.demo_tools(),
        max_words=20,
    )
    prompt = llama31_prompt(request, TODAY)
    assert prompt.startswith("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n")
    assert "Today Date: 02 March 2026" in prompt
    assert '"name": "appointments.reschedule"' in prompt
    assert '<|start_header_id|>ipython<|end_header_id|>\n\n{"s": "ok"}<|eot_id|>' in prompt
    assert prompt.endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")


def test_calls_are_parsed_against_the_offered_tools() -> None:
    tools = corpus.demo_tools()
    call = '{"name": "orders.status", "parameters": {"order_id": "A123"}}'
    assert parse_call(call, tools) == ToolIntent(
        name="orders.status", arguments={"order_id": "A123"}
    )
    assert parse_call('{"name": "account.close", "parameters": {}}', tools) is None
    assert parse_call('{"name": "orders.status"', tools) is None


def test_the_grammar_admits_a_call_or_a_reply() -> None:
    grammar = reply_or_call_grammar(corpus.demo_tools())
    assert grammar.startswith("root ::= call | reply\n")
    assert "\ncall ::= " in grammar
    assert "\\d" not in grammar  # patterns stay out of the grammar: llama.cpp rejects these


@pytest.mark.model
@pytest.mark.anyio
@pytest.mark.timeout(300)
async def test_llama31_runner_mechanics_on_a_stand_in_model(llm_path: str) -> None:
    """SmolLM2 stands in for Llama 3.1 8B: the prompt, grammar and parsing run for real; what
    the small model says is not judged."""
    llm = Llama31Llm(
        LlamaEngine(llm_path, chat_format="llama-3"), QueueSettings(), today=lambda: TODAY
    )
    await llm.warm_up()
    request = LlmRequest(
        messages=[Message(role="user", content="What's the status of order A123?")],
        tools=corpus.demo_tools(),
        max_words=6,
    )
    async with aclosing(llm.generate(request)) as outputs:
        results = [o async for o in outputs]
    assert results
    assert all(isinstance(o, TextChunk | ToolIntent) for o in results)
    names = {t.name for t in corpus.demo_tools()}
    assert all(o.name in names for o in results if isinstance(o, ToolIntent))


@pytest.mark.model
@pytest.mark.anyio
@pytest.mark.timeout(300)
async def test_llama31_leaves_found_claims_to_their_approved_wording(llm_path: str) -> None:
    """After knowledge.search the runner says nothing: the orchestrator speaks the claims it
    found, verbatim (a paraphrase of a policy would not pass strict grounding)."""
    llm = Llama31Llm(
        LlamaEngine(llm_path, chat_format="llama-3"), QueueSettings(), today=lambda: TODAY
    )
    request = LlmRequest(
        messages=[
            Message(role="user", content="Can I return an opened item?"),
            Message(role="tool", content="", tool_name="knowledge.search", tool_status="committed",
                    tool_result={"best": ["returns.opened"], "claims": []}),
        ],
        tools=[*corpus.demo_tools(), ToolDefinition(
            name="knowledge.search", builtin="knowledge.search", description="Approved answers.",
            input_schema={"type": "object", "properties": {"query": {"type": "string"}}},
        )],
    )
    async with aclosing(llm.generate(request)) as outputs:
        assert [o async for o in outputs] == []


# ------------------------------------------------------------------------------- Parakeet


@dataclass
class FakeHypothesis:
    text: str
    timestamp: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


class FakeNemoModel:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def transcribe(self, audio: list[Any], **options: Any) -> list[FakeHypothesis]:
        self.calls.append(options)
        words = [
            {"word": "cancel", "start": 0.1, "end": 0.4},
            {"word": "it", "start": 0.5, "end": 0.6},
            {"word": "now", "start": 0.9, "end": 1.3},  # TDT durations may overrun the audio
        ]
        text = "cancel it now"
        return [FakeHypothesis(text, {"word": words} if options["timestamps"] else {})]


@pytest.mark.anyio
async def test_parakeet_words_and_partials() -> None:
    engine = ParakeetEngine("unused.nemo", device="cpu")
    engine._model = FakeNemoModel()
    runner = SpeechToText(engine, QueueSettings())
    final = await runner.transcribe(bytes(32_000), sample_rate=16_000, locale="en-US")
    assert final.text == "cancel it now"
    assert [(w.text, w.start_ms, w.end_ms) for w in final.words] == [
        ("cancel", 100, 400),
        ("it", 500, 600),
        ("now", 900, 1000),  # clamped to the 1 s of audio
    ]
    partial = await runner.partial(bytes(32_000), sample_rate=16_000, locale="en-US")
    assert partial.final is False
    assert engine._model.calls[-1] == {"batch_size": 1, "timestamps": False, "verbose": False}


# ------------------------------------------------------------------------------ Qwen3-TTS


@dataclass
class FakePromptItem:
    ref_text: str | None
    x_vector_only_mode: bool


class FakeQwenModel:
    """The calls the engine makes on ``qwen_tts.Qwen3TTSModel``: a Base model's cloning and a
    CustomVoice model's preset speakers. What each was asked is recorded."""

    def __init__(self, speakers: list[str] | None = None) -> None:
        self.prompts: list[tuple[str | None, bool]] = []
        self.clones: list[str] = []
        self.presets: list[tuple[str, str]] = []
        self.spoken: list[tuple[str, str]] = []
        """(text, voice) of every sentence rendered: the preset speaker, or ``clone``."""
        self.speakers = speakers

    def get_supported_speakers(self) -> list[str] | None:
        return self.speakers

    def create_voice_clone_prompt(
        self, *, ref_audio: tuple[Any, int], ref_text: str | None, x_vector_only_mode: bool
    ) -> list[FakePromptItem]:
        self.prompts.append((ref_text, x_vector_only_mode))
        return [FakePromptItem(ref_text, x_vector_only_mode)]

    def generate_voice_clone(
        self, *, text: str, language: str, voice_clone_prompt: list[FakePromptItem]
    ) -> tuple[list[Any], int]:
        self.clones.append(text)
        self.spoken.append((text, "clone"))
        return [np.zeros(12_000, dtype=np.float32)], 24_000

    def generate_custom_voice(
        self, *, text: str, language: str, speaker: str
    ) -> tuple[list[Any], int]:
        self.presets.append((text, speaker))
        self.spoken.append((text, speaker))
        return [np.zeros(12_000, dtype=np.float32)], 24_000


def qwen_engine(
    *, base: bool = True, preset: bool = True, speaker: str = "Ryan"
) -> tuple[QwenTtsEngine, FakeQwenModel]:
    """The engine on one fake standing in for both models (Base and CustomVoice), as
    ``build_gb10_runners`` configures it; ``base``/``preset`` ``False``: that model is not
    configured."""
    engine = QwenTtsEngine(
        "base-dir" if base else "", preset_model_dir="custom-dir" if preset else "",
        speaker=speaker, device="cpu", streaming=False,
    )
    fake = FakeQwenModel(speakers=["aiden", "ryan", "vivian"])
    engine._model = fake if base else None
    engine._preset = fake if preset else None
    return engine, fake


def pcm(chunks: Iterator[bytes]) -> bytes:
    return b"".join(chunks)


def test_clone_prompts_are_built_once_per_voice_version_in_full_icl() -> None:
    engine, fake = qwen_engine()
    v3 = VoiceRef(
        voice_profile_id="vp_acme", voice_version="3", ref_audio=wav_bytes(), ref_text="Hi there."
    )
    v4 = VoiceRef(
        voice_profile_id="vp_acme", voice_version="4", ref_audio=wav_bytes(0.6), ref_text="Hi."
    )
    assert len(pcm(engine.render("One.", v3))) == 24_000  # 0.5 s at 24 kHz, PCM16
    pcm(engine.render("Two.", v3))
    pcm(engine.render("Three.", v4))
    assert fake.prompts == [("Hi there.", False), ("Hi.", False)]
    assert sorted(engine.cached_voices()) == [("vp_acme", "3"), ("vp_acme", "4")]


def test_x_vector_mode_only_when_the_profile_allows_it() -> None:
    engine, fake = qwen_engine()
    voice = VoiceRef(
        voice_profile_id="vp_x", voice_version="1", ref_audio=wav_bytes(), x_vector_only=True
    )
    pcm(engine.render("One.", voice))
    assert fake.prompts == [(None, True)]
    no_text = VoiceRef(voice_profile_id="vp_y", voice_version="1", ref_audio=wav_bytes())
    with pytest.raises(VoceroError) as raised:
        pcm(engine.render("One.", no_text))
    assert raised.value.code is ErrorCode.TTS_UNAVAILABLE


def test_revocation_drops_every_cached_version() -> None:
    engine, _fake = qwen_engine()
    for version in ("1", "2"):
        voice = VoiceRef(
            voice_profile_id="vp_acme", voice_version=version, ref_audio=wav_bytes(), ref_text="Hi."
        )
        pcm(engine.render("One.", voice))
    other = VoiceRef(voice_profile_id="vp_other", voice_version="1", ref_audio=wav_bytes(),
                     ref_text="Hi.")
    pcm(engine.render("One.", other))
    engine.forget_voice("vp_acme")
    assert engine.cached_voices() == [("vp_other", "1")]


def test_the_builtin_voice_is_a_preset_speaker_never_a_clone() -> None:
    """Issue 41: the built-in voice is the CustomVoice model's preset speaker; nothing is
    cloned for it (there is no reference recording to clone)."""
    engine, fake = qwen_engine(speaker="Ryan")
    assert len(pcm(engine.render("One.", DEFAULT_VOICE))) == 24_000
    assert fake.presets == [("One.", "Ryan")]
    assert fake.prompts == [] and fake.clones == []
    assert engine.cached_voices() == []


def test_each_model_speaks_only_its_own_voices() -> None:
    """No swap: a vault voice without a Base model, or the built-in one without a
    CustomVoice model, is not spoken (``speaks`` says so before a session opens with it)."""
    vault_voice = VoiceRef(voice_profile_id="vp_acme", voice_version="1", ref_audio=wav_bytes(),
                           ref_text="Hi.")
    presets_only, fake = qwen_engine(base=False)
    assert presets_only.speaks(DEFAULT_VOICE) and not presets_only.speaks(vault_voice)
    with pytest.raises(VoceroError) as raised:
        pcm(presets_only.render("One.", vault_voice))
    assert raised.value.code is ErrorCode.VOICE_UNAVAILABLE
    assert fake.presets == [] and fake.clones == []
    clones_only, fake = qwen_engine(preset=False)
    assert clones_only.speaks(vault_voice) and not clones_only.speaks(DEFAULT_VOICE)
    with pytest.raises(VoceroError) as raised:
        pcm(clones_only.render("One.", DEFAULT_VOICE))
    assert raised.value.code is ErrorCode.VOICE_UNAVAILABLE
    assert fake.presets == [] and fake.prompts == []


def test_the_speaker_must_be_one_of_the_models_presets(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = QwenTtsEngine(preset_model_dir="custom-dir", speaker="Nobody", device="cpu")
    fake = FakeQwenModel(speakers=["ryan", "aiden"])
    monkeypatch.setattr(threads, "load_once", lambda key, factory: (fake, None))
    with pytest.raises(VoceroError) as raised:
        engine.load()
    assert "Nobody" in str(raised.value) and "ryan" in str(raised.value)
    engine = QwenTtsEngine(preset_model_dir="custom-dir", speaker="RYAN", device="cpu")
    engine.load()  # names compare without case, as qwen-tts does
    pcm(engine.render("One.", DEFAULT_VOICE))
    assert fake.presets == [("One.", "RYAN")]


def test_reference_audio_must_be_a_wav() -> None:
    audio, rate = decode_wav(wav_bytes(0.25, 24_000))
    assert rate == 24_000
    assert audio.shape == (6_000,)
    with pytest.raises(VoceroError):
        decode_wav(b"not a wav")


# ---------------------------------------------------------------------------- the factory


def test_the_factory_names_every_missing_model_path() -> None:
    with pytest.raises(ConfigError) as raised:
        build_gb10_runners(Gb10Settings())
    assert "VOCERO_PARAKEET_MODEL" in raised.value.field
    assert "VOCERO_QWEN_TTS_CUSTOM_MODEL" in raised.value.field
    assert "DEFAULT_VOICE" not in raised.value.field  # no reference recording to clone


def test_the_settings_have_no_cloned_default_voice() -> None:
    """Issue 41: the built-in voice is no longer a clone of an environment file."""
    settings = Gb10Settings.from_env({
        "VOCERO_DEFAULT_VOICE_AUDIO": "/voices/someone.wav",
        "VOCERO_DEFAULT_VOICE_TEXT": "Hello.",
        "VOCERO_QWEN_TTS_SPEAKER": "Aiden",
    })
    assert settings.qwen_tts_speaker == "Aiden"
    assert "/voices/someone.wav" not in repr(settings)
    assert Gb10Settings.from_env({}).qwen_tts_speaker == "Ryan"


def test_the_factory_wires_the_gb10_runners(tmp_path: Any) -> None:
    settings = Gb10Settings.from_env(
        {
            "VOCERO_PARAKEET_MODEL": "/models/parakeet-tdt-0.6b-v2.nemo",
            "VOCERO_LLAMA_MODEL": "/models/Meta-Llama-3.1-8B-Instruct-Q8_0.gguf",
            "VOCERO_QWEN_TTS_MODEL": "/models/Qwen3-TTS-12Hz-1.7B-Base",
            "VOCERO_QWEN_TTS_CUSTOM_MODEL": "/models/Qwen3-TTS-12Hz-1.7B-CustomVoice",
        }
    )
    try:
        runners = build_gb10_runners(settings)
    except FileNotFoundError:
        pytest.skip("no Silero VAD model here")
    assert runners.kind == "gb10"
    assert runners.tts.sample_rate == 24_000
    assert json.dumps(runners.statuses()["llm"].health) == '"starting"'
