"""The prepared answer's switch and the merge window (ADR-0037): flag, env, default, and the
``--print-config`` line that shows which is in effect."""

from __future__ import annotations

import pytest

from tests.app.test_print_config import run
from vocero.app.cli import build_parser
from vocero.app.settings import settings_from


def test_drafts_are_on_by_default_and_a_flag_turns_them_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("VOCERO_PREPARED_ANSWERS", raising=False)
    monkeypatch.delenv("VOCERO_MERGE_WINDOW_MS", raising=False)
    default = settings_from(build_parser().parse_args(["serve"]))
    assert (default.prepared_answers, default.merge_window_ms) == (True, 1500.0)
    off = settings_from(build_parser().parse_args(
        ["serve", "--prepared-answers", "off", "--merge-window-ms", "0"]))
    assert (off.prepared_answers, off.merge_window_ms) == (False, 0.0)
    monkeypatch.setenv("VOCERO_PREPARED_ANSWERS", "off")
    assert settings_from(build_parser().parse_args(["serve"])).prepared_answers is False


@pytest.mark.process
def test_print_config_shows_the_switch_and_its_source() -> None:
    config = run("--merge-window-ms", "900", env={"VOCERO_PREPARED_ANSWERS": "off"})
    assert config["prepared_answers"] == {"value": False, "source": "env",
                                          "env": "VOCERO_PREPARED_ANSWERS"}
    assert config["merge_window_ms"] == {"value": 900.0, "source": "flag"}
