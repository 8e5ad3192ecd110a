"""``vocero serve`` flags of ADR-0038 (false interruptions, each caller's pace): parsed, shown by
``--print-config`` with their source, and handed to every session as its settings."""

from __future__ import annotations

import argparse

import pytest

from vocero.app.adapters.sessions import caller_pace_of, false_interruptions_of
from vocero.app.commands.print_config import effective_config
from vocero.app.settings import add_serve_arguments, settings_from
from vocero.orchestrator.caller_pace import PaceSettings
from vocero.orchestrator.false_interruptions import ResumeSettings


def parsed(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    return parser.parse_args(argv)


def test_the_defaults_reach_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RESUME_FALSE_INTERRUPTIONS", "CALLER_PACE", "PACE_FLOOR_MAX_MS",
                 "FALSE_INTERRUPTION_GRACE_MS"):
        monkeypatch.delenv(f"VOCERO_{name}", raising=False)
    settings = settings_from(parsed([]))
    assert false_interruptions_of(settings) == ResumeSettings(
        enabled=True, window_ms=1500, grace_ms=300)
    assert caller_pace_of(settings) == PaceSettings(
        enabled=True, floor_min_ms=250, floor_max_ms=900, after_pauses=2)


def test_flags_and_env_turn_them_off_and_move_the_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOCERO_CALLER_PACE", "off")
    argv = ["--resume-false-interruptions", "off", "--false-interruption-window-ms", "900",
            "--false-interruption-grace-ms", "0", "--pace-floor-min-ms", "300",
            "--pace-floor-max-ms", "1200", "--pace-after-pauses", "3"]
    settings = settings_from(parsed(argv))
    assert false_interruptions_of(settings) == ResumeSettings(
        enabled=False, window_ms=900, grace_ms=0)
    assert caller_pace_of(settings) == PaceSettings(
        enabled=False, floor_min_ms=300, floor_max_ms=1200, after_pauses=3)
    config = effective_config(settings, argv)
    assert config["resume_false_interruptions"] == {"value": False, "source": "flag"}
    assert config["caller_pace"] == {"value": False, "source": "env", "env": "VOCERO_CALLER_PACE"}
    assert config["pace_floor_max_ms"] == {"value": 1200, "source": "flag"}
    assert config["false_interruption_grace_ms"] == {"value": 0, "source": "flag"}
