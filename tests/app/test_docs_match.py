"""What the README and the design records say matches what ships (issue #25, item 5): the
command list names every command and benchmark, the test command is described as it runs, the
session cap's default is the figure that was measured, and built work is not called
"in progress"."""

from __future__ import annotations

import argparse
import re
import shlex

from vocero.app.cli import build_parser
from vocero.app.settings import REPO_ROOT, Settings
from vocero.bench.command import _registry

README = (REPO_ROOT / "README.md").read_text()
SCALING = (REPO_ROOT / "docs" / "scaling.md").read_text()
MEASURED_SESSIONS_ONE_WORKER = 100
"""docs/scaling.md, "Real-time sessions, one worker and two": 100 within limits, 150 not."""


def _commands(parser: argparse.ArgumentParser, prefix: str = "vocero") -> list[str]:
    found: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                nested = _commands(sub, f"{prefix} {name}")
                found.extend(nested or [f"{prefix} {name}"])
    return found


def _usage_block() -> str:
    section = README.split("## Using it", 1)[1]
    return section.split("```bash", 1)[1].split("```", 1)[0]


def test_the_readme_lists_every_command() -> None:
    usage = _usage_block()
    missing = [c for c in _commands(build_parser()) if c not in usage]
    assert not missing, f"commands the README's list omits: {missing}"


def test_the_readme_names_every_benchmark() -> None:
    usage = _usage_block()
    bench_lines = " ".join(line for line in usage.splitlines() if "bench" in line or "#" in line)
    named = set(re.findall(r"[a-z][a-z-]+", bench_lines))
    missing = sorted(set(_registry()) - named)
    assert not missing, f"benchmarks the README's list omits: {missing}"


def test_the_readme_says_what_the_test_command_runs() -> None:
    script = (REPO_ROOT / "scripts" / "test.sh").read_text()
    tools = [shlex.split(line)[0] for line in script.splitlines()
             if line.strip() and not line.startswith(("#", "set ", "cd "))]
    tools = ["pytest" if t == "python3" else t for t in tools]
    tests = README.split("## Tests", 1)[1].split("##", 1)[0]
    missing = [t for t in tools if t not in tests]
    assert not missing, f"scripts/test.sh runs {tools}; the README's Tests section omits {missing}"


def test_the_session_cap_defaults_to_what_one_worker_was_measured_to_hold() -> None:
    assert Settings().max_sessions == MEASURED_SESSIONS_ONE_WORKER
    assert f"| 1 (SQLite) | {MEASURED_SESSIONS_ONE_WORKER} | yes |" in SCALING
    assert f"--max-sessions` (default {MEASURED_SESSIONS_ONE_WORKER})" in README
    assert "about 80" not in SCALING


def test_built_work_is_not_called_in_progress() -> None:
    for adr in ("0006-durable-state-and-leases.md", "0011-one-node-with-admission.md"):
        text = (REPO_ROOT / "docs" / "adr" / adr).read_text()
        assert "in progress" not in text and "being added" not in text, adr
