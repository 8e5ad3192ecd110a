"""The GB10 loading code on tiny random models; runs wherever the ``gb10`` extra is installed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.inference.tiny_models import tiny_parakeet
from vocero.inference.cpu.settings import QueueSettings
from vocero.inference.cpu.stt import SpeechToText
from vocero.inference.gb10.stt import ParakeetEngine

pytestmark = [
    pytest.mark.gb10,
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore"),  # NeMo, Lightning and torch warn on import
    pytest.mark.timeout(300),
]


@pytest.fixture(scope="module")
def parakeet_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("nemo.collections.asr", reason="the gb10 extra is not installed")
    return tiny_parakeet(tmp_path_factory.mktemp("parakeet"))


async def test_parakeet_restores_a_nemo_archive_and_transcribes(parakeet_path: Path) -> None:
    runner = SpeechToText(ParakeetEngine(str(parakeet_path), device="cpu"), QueueSettings())
    await runner.warm_up()
    assert runner.status().health == "ready"
    noise = (np.random.default_rng(1).normal(0, 0.1, 32_000) * 32_767).astype("<i2").tobytes()
    final = await runner.transcribe(noise, sample_rate=16_000, locale="en-US")
    assert final.final
    for word in final.words:
        assert 0 <= word.start_ms <= word.end_ms <= 2_100
    partial = await runner.partial(noise, sample_rate=16_000, locale="en-US")
    assert partial.final is False
    assert partial.words == []
