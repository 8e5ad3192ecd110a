from __future__ import annotations

import importlib.util

import anyio
import pytest

from vocero.inference.cpu.settings import CpuSettings, vad_model_path
from vocero.inference.toolkit.settings import ModelNotFoundError
from vocero.inference.toolkit.turn import EndOfTurnJudge, SmartTurnEngine, turn_model_path
from vocero.inference.toolkit.vad import SileroVad


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _require(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")


@pytest.fixture(scope="session")
def smart_turn() -> SmartTurnEngine:
    _require("onnxruntime")
    try:
        path = turn_model_path()
    except ModelNotFoundError as exc:
        pytest.skip(str(exc))
    engine = SmartTurnEngine(path, threads=CpuSettings.from_env().cpu_threads())
    engine.load()
    return engine


@pytest.fixture(scope="session")
def turn_judge(smart_turn: SmartTurnEngine) -> EndOfTurnJudge:
    judge = EndOfTurnJudge(smart_turn)
    anyio.run(judge.warm_up)
    return judge


@pytest.fixture(scope="session")
def silero() -> str:
    _require("onnxruntime")
    try:
        path = vad_model_path(CpuSettings.from_env())
    except ModelNotFoundError as exc:
        pytest.skip(str(exc))
    SileroVad(path).load()
    return path
