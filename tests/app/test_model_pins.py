"""The CPU models are pinned by SHA-256 (vocero/inference/cpu/pins.json) and checked when the
runners are built: a changed or unpinned file refuses to start, naming the file."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vocero.app.settings import REPO_ROOT
from vocero.inference.cpu import CpuSettings, check_pins, model_paths
from vocero.inference.cpu.pins import ModelPinError, sha256_of


def test_the_installed_models_match_their_pins() -> None:
    paths = model_paths(CpuSettings())
    assert set(paths) == {"stt", "vad", "llm", "tts", "tts_config", "turn"}
    check_pins(paths, environ={})  # raises on any difference


def test_a_changed_model_file_is_refused_by_name(tmp_path: Path) -> None:
    vad = Path(model_paths(CpuSettings())["vad"])
    changed = tmp_path / vad.name
    shutil.copyfile(vad, changed)
    with changed.open("r+b") as file:
        file.seek(100)
        byte = file.read(1)
        file.seek(100)
        file.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(ModelPinError) as refused:
        check_pins({"vad": str(changed)}, environ={})
    assert refused.value.path == str(changed)
    assert refused.value.field == "vad"
    assert sha256_of(changed) in refused.value.problem


def test_an_unpinned_model_is_refused_unless_its_pin_is_given(tmp_path: Path) -> None:
    own = tmp_path / "my-vad.onnx"
    own.write_bytes(b"not the pinned model")
    with pytest.raises(ModelPinError, match="not pinned"):
        check_pins({"vad": str(own)}, environ={})
    pins = tmp_path / "pins.json"
    pins.write_text(json.dumps({"vad": {"files": {own.name: sha256_of(own)}}}))
    check_pins({"vad": str(own)}, environ={"VOCERO_MODEL_PINS": str(pins)})


def test_a_missing_file_of_a_pinned_directory_is_refused(tmp_path: Path) -> None:
    stt = Path(model_paths(CpuSettings())["stt"])
    partial = tmp_path / "whisper"
    partial.mkdir()
    for name in ("config.json", "vocabulary.txt", "tokenizer.json"):
        shutil.copyfile(stt / name, partial / name)
    with pytest.raises(ModelPinError, match="a pinned file is missing") as refused:
        check_pins({"stt": str(partial)}, environ={})
    assert refused.value.path == str(partial / "model.bin")


@pytest.mark.process
def test_serve_refuses_to_start_naming_the_file(tmp_path: Path) -> None:
    changed = tmp_path / "silero_vad_v6.onnx"
    changed.write_bytes(b"\0" * 64)
    done = subprocess.run(
        [sys.executable, "-m", "vocero", "serve", "--runners", "cpu", "--port", "0",
         "--db", f"sqlite:///{tmp_path / 'v.db'}"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=False,
        env={"PATH": "/usr/bin:/bin", "VOCERO_VAD_MODEL": str(changed), "HOME": str(tmp_path)},
    )
    assert done.returncode == 2, done.stderr
    assert f"configuration error: {changed}: vad: sha256 " in done.stderr
    assert "does not match the pin" in done.stderr
    assert "vocero listening" not in done.stdout
