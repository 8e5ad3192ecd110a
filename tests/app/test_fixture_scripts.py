"""Every shipped simulator script loads and validates."""

from __future__ import annotations

from pathlib import Path

import pytest

from vocero.app.settings import REPO_ROOT
from vocero.contracts.errors import ConfigError
from vocero.inference.sim import load_script

SCRIPTS = sorted((REPO_ROOT / "fixtures" / "sim").glob("*.yaml"))


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_fixture_script_loads(path: Path) -> None:
    script = load_script(path)
    assert script.llm, "a script without rules answers nothing"


def test_bad_script_names_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("llm:\n  - match: '('\n    reply: x\n")
    with pytest.raises(ConfigError) as error:
        load_script(bad)
    assert "bad.yaml" in str(error.value) and "llm[0].match" in str(error.value)
