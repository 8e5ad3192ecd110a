from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import TypeVar

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


T = TypeVar("T")
Runner = TypeVar("Runner", RoutedLlm, TextToSpeech, SpeechToText)


def _require(*modules: str) -> None:
    for module in modules:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")


def _located(module: str, find: Callable[[CpuSettings], T], settings: CpuSettings) -> T:
    """The model files ``find`` names, the test skipped without ``module`` or the files."""
    _require(module)
    try:
        return find(settings)
    except ModelNotFoundError as exc:
        pytest.skip(str(exc))


def _warm(runner: Runner) -> Runner:
    anyio.run(runner.warm_up)
    return runner


@pytest.fixture(scope="session")
def cpu_settings() -> CpuSettings:
    return CpuSettings.from_env()


@pytest.fixture(scope="session")
def llm_path(cpu_settings: CpuSettings) -> str:
    return _located("llama_cpp", llm_model_path, cpu_settings)


@pytest.fixture(scope="session")
def llama(llm_path: str, cpu_settings: CpuSettings) -> LlamaEngine:
    engine = LlamaEngine(llm_path, threads_count=cpu_settings.cpu_threads())
    engine.load()
    return engine


@pytest.fixture(scope="session")
def routed_llm(llama: LlamaEngine) -> RoutedLlm:
    return _warm(RoutedLlm(llama, QueueSettings(), today=corpus.reference_date))


@pytest.fixture(scope="session")
def piper(cpu_settings: CpuSettings) -> PiperEngine:
    model, config = _located("piper", tts_model_paths, cpu_settings)
    engine = PiperEngine(model, config, allow_voice_fallback=True)
    engine.load()
    return engine


@pytest.fixture(scope="session")
def tts(piper: PiperEngine) -> TextToSpeech:
    return _warm(TextToSpeech(piper, QueueSettings()))


@pytest.fixture(scope="session")
def whisper(cpu_settings: CpuSettings) -> WhisperEngine:
    path = _located("faster_whisper", stt_model_path, cpu_settings)
    engine = WhisperEngine(path, threads=cpu_settings.cpu_threads())
    engine.load()
    return engine


@pytest.fixture(scope="session")
def stt(whisper: WhisperEngine) -> SpeechToText:
    return _warm(SpeechToText(whisper, QueueSettings()))


@pytest.fixture(scope="session")
def vad(cpu_settings: CpuSettings) -> SileroVad:
    return SileroVad(_located("onnxruntime", vad_model_path, cpu_settings))
