from __future__ import annotations

import pytest

from vocero.contracts.errors import VoceroError
from vocero.inference.cpu import CpuSettings, build_cpu_runners
from vocero.inference.cpu.settings import stt_model_path
from vocero.inference.cpu.tts import PiperEngine
from vocero.inference.toolkit.settings import ModelNotFoundError, QueueSettings
from vocero.inference.toolkit.stt import SpeechToText
from vocero.inference.toolkit.tts import TextToSpeech


def test_model_paths_come_from_the_environment() -> None:
    settings = CpuSettings.from_env(
        {"VOCERO_STT_MODEL": "/nowhere/whisper", "VOCERO_CPU_THREADS": "3"}
    )
    assert settings.cpu_threads() == 3
    with pytest.raises(ModelNotFoundError, match="VOCERO_STT_MODEL=/nowhere/whisper"):
        stt_model_path(settings)


@pytest.mark.model
@pytest.mark.anyio
async def test_the_default_cpu_set_warms_up_and_is_ready(
    stt: SpeechToText, tts: TextToSpeech, routed_llm: object
) -> None:
    runners = build_cpu_runners(CpuSettings.from_env({}))  # weights already loaded: shared
    assert runners.kind == "cpu"
    assert not runners.ready()
    await runners.warm_up()
    assert runners.ready()
    assert runners.statuses()["llm"].detail == "queued 0, rejected 0, expired 0"
    assert runners.tts.sample_rate == 22_050
    assert runners.vad.open().push(bytes(3200)) == []
    assert runners.stt.partial_interval_ms == 0, "Whisper on a CPU: finals only by default"
    live = build_cpu_runners(CpuSettings.from_env({"VOCERO_STT_PARTIAL_MS": "800"}))
    assert live.stt.partial_interval_ms == 800


@pytest.mark.model
@pytest.mark.anyio
async def test_a_broken_model_marks_the_runner_unavailable(piper: PiperEngine) -> None:
    broken = PiperEngine(
        piper.model_path + ".missing", piper.config_path, allow_voice_fallback=True
    )
    runner = TextToSpeech(broken, QueueSettings())
    with pytest.raises(VoceroError):
        await runner.warm_up()
    assert runner.status().health == "unavailable"
