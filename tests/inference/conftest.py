from __future__ import annotations

import importlib.util

import anyio
import pytest

from tests.inference import corpus
from vocero.inference.cpu.settings import (
    CpuSettings,
    llm_model_path,
    stt_model_path,
    tts_model_paths,
    vad_model_path,
)
from vocero.inference.cpu.stt import WhisperEngine
from vocero.inference.cpu.tts import PiperEngine
from vocero.inference.toolkit.llama import LlamaEngine
from vocero.inference.toolkit.llm import RoutedLlm
from vocero.inference.toolkit.settings import ModelNotFoundError, QueueSettings
from vocero.inference.toolkit.stt import SpeechToText
from vocero.inference.toolkit.tts import TextToSpeech
from vocero.inference.toolkit.vad import SileroVad


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the server runs on asyncio (uvicorn); model threads are backend-neutral


def _require(*modules: str) -> None:
    for module in modules:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")


@pytest.fixture(scope="session")
def cpu_settings() -> CpuSettings:
    return CpuSettings.from_env()


@pytest.fixture(scope="session")
def llm_path(cpu_settings: CpuSettings) -> str:
    _require("llama_cpp")
    try:
        return llm_model_path(cpu_settings)
    except ModelNotFoundError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def llama(llm_path: str, cpu_settings: CpuSettings) -> LlamaEngine:
    engine = LlamaEngine(llm_path, threads_count=cpu_settings.cpu_threads())
    engine.load()
    return engine


@pytest.fixture(scope="session")
def routed_llm(llama: LlamaEngine) -> RoutedLlm:
    llm = RoutedLlm(llama, QueueSettings(), today=corpus.reference_date)
    anyio.run(llm.warm_up)
    return llm


@pytest.fixture(scope="session")
def piper(cpu_settings: CpuSettings) -> PiperEngine:
    _require("piper")
    try:
        model, config = tts_model_paths(cpu_settings)
    except ModelNotFoundError as exc:
        pytest.skip(str(exc))
    engine = PiperEngine(model, config, allow_voice_fallback=True)
    engine.load()
    return engine


@pytest.fixture(scope="session")
def tts(piper: PiperEngine) -> TextToSpeech:
    runner = TextToSpeech(piper, QueueSettings())
    anyio.run(runner.warm_up)
    return runner


@pytest.fixture(scope="session")
def whisper(cpu_settings: CpuSettings) -> WhisperEngine:
    _require("faster_whisper")
    try:
        path = stt_model_path(cpu_settings)
    except ModelNotFoundError as exc:
        pytest.skip(str(exc))
    engine = WhisperEngine(path, threads=cpu_settings.cpu_threads())
    engine.load()
    return engine


@pytest.fixture(scope="session")
def stt(whisper: WhisperEngine) -> SpeechToText:
    runner = SpeechToText(whisper, QueueSettings())
    anyio.run(runner.warm_up)
    return runner


@pytest.fixture(scope="session")
def vad(cpu_settings: CpuSettings) -> SileroVad:
    _require("onnxruntime")
    try:
        return SileroVad(vad_model_path(cpu_settings))
    except ModelNotFoundError as exc:
        pytest.skip(str(exc))
