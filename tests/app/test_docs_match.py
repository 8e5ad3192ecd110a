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


ADR_DIR = REPO_ROOT / "docs" / "adr"
ADR_SECTIONS = ("Context", "Decision", "Alternatives", "Consequences", "Risks",
                "Review condition")
"""Seed 004 §16: "Each ADR must include context, decision, alternatives, consequences, risks,
status and review condition." A heading may add a qualifier ("Decision (as it was)" of a
superseded record, "Alternatives considered"), never replace the name."""


def _adr_files() -> list[str]:
    return sorted(p.name for p in ADR_DIR.glob("0*.md"))


def test_every_adr_has_a_status_and_the_sections_seed_004_asks_for() -> None:
    names = _adr_files()
    assert len(names) >= 25, names
    missing: dict[str, list[str]] = {}
    for name in names:
        text = (ADR_DIR / name).read_text()
        headings = re.findall(r"^## (.+?)\s*$", text, re.MULTILINE)
        lacks = [section for section in ADR_SECTIONS
                 if not any(re.fullmatch(rf"{section}(?: considered| \(.+\))?", heading)
                            for heading in headings)]
        if not re.search(r"^\* \*\*Status:\*\* \S", text, re.MULTILINE):
            lacks.insert(0, "Status")
        if lacks:
            missing[name] = lacks
    assert not missing, f"ADRs without what seed 004 §16 asks of each: {missing}"


def test_the_adr_index_lists_every_record_and_only_those() -> None:
    index = (ADR_DIR / "README.md").read_text()
    rows = re.findall(r"^\| \[(\d{4})\]\((0[^)]+\.md)\) \|", index, re.MULTILINE)
    listed = {file for _, file in rows}
    assert all(file.startswith(number) for number, file in rows), rows
    unlisted = [name for name in _adr_files() if name not in listed]
    assert not unlisted, f"ADRs the index table of docs/adr/README.md omits: {unlisted}"
    gone = sorted(listed - set(_adr_files()))
    assert not gone, f"the ADR index links records that do not exist: {gone}"
