"""Fixtures every suite shares (a sim app and its settings), the test tiers (markers applied
from the fixtures a test uses and its directory) and the Hypothesis profiles."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
import yaml
from hypothesis import settings
from starlette.testclient import TestClient

from vocero.app.server import create_app
from vocero.app.settings import REPO_ROOT, Settings

pytest_plugins = ["tests.support.db"]
"""The database fixtures (``db_url``, ``empty_url``, ``store``, ``migrated_template``)."""

FIXTURES = REPO_ROOT / "fixtures"

settings.register_profile("dev", deadline=None)
settings.register_profile("ci", derandomize=True, deadline=None, database=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
"""``ci`` (``.ci/run``): the same examples every run, no example database, no deadline on a
shared CPU. ``dev`` (the default): new examples each run. A test's own ``@settings`` wins."""

MODEL_FIXTURES = frozenset({
    "llm_path", "llama", "routed_llm", "piper", "tts", "whisper", "stt", "vad", "smart_turn",
    "turn_judge", "silero",
})
"""Fixtures that load a real CPU model (``tests/inference``, ``tests/turns``)."""
PROCESS_FIXTURES = frozenset({
    "client", "sim_settings", "app_settings", "servers", "calls", "shared", "start_server",
    "console_server",
})
"""Fixtures that start processes: the sim app (its demo profile's MCP servers run on stdio),
fixture MCP servers over HTTP, ``vocero serve``."""
DIRECTORY_MARKS = {
    "scaling": ("process", "slow"),
    "console": ("process", "browser"),
    "browser": ("process", "browser"),
    "mcp": ("process",),
}
"""Whole suites of one kind (``tests/mcp``: every gateway test starts fixture servers)."""
FAST_MODULES = frozenset({"test_mcp_units.py", "test_mcp_stateless_units.py"})
"""Modules of those suites that start nothing (pure units)."""
PG_REASON = "VOCERO_TEST_PG_URL is not set"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tiers: ``model``, ``process``, ``browser``, ``slow`` and ``pg`` applied from what a
    test uses; modules mark the rest themselves (``pytestmark``)."""
    tests = Path(__file__).parent
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        path = Path(str(item.path))
        kinds: set[str] = set()
        if fixtures & MODEL_FIXTURES:
            kinds.add("model")
        if fixtures & PROCESS_FIXTURES:
            kinds.add("process")
        if path.is_relative_to(tests) and path.name not in FAST_MODULES:
            kinds.update(DIRECTORY_MARKS.get(path.relative_to(tests).parts[0], ()))
        if any(mark.kwargs.get("reason") == PG_REASON for mark in item.iter_markers("skipif")):
            kinds.add("pg")
        for kind in sorted(kinds - {mark.name for mark in item.iter_markers()}):
            item.add_marker(kind)

@pytest.fixture(autouse=True)
def _structlog_as_it_was() -> Iterator[None]:
    """A command run in process (``vocero review``, ``purge``, ``profiles`` through their
    ``main``) configures structlog for the whole process at level warning, as the command line
    should; restored after each test, so a later test's ``capture_logs`` still sees info lines."""
    before = structlog.get_config()
    yield
    structlog.configure(**before)


DEMO_SCRIPT = {
    "stt": ["what is the status of order A123", "yes"],
    "tts": {"ms_per_char": 10},
    "llm": [
        {"match": r"status of order (?P<order>\w+)", "tool": "orders.status",
         "arguments": {"order_id": "{order}"}, "reply": "Order {order} is {result.status}."},
        {"match": r"^(yes|yeah|go ahead)\b", "intent": "confirm"},
        {"match": r"what did you say", "reply": "I said: {last_assistant}"},
        {"match": r"tell me a story", "reply": "Once upon a time there was a very long story. "
         "It went on for quite a while, with many words in it. And then it ended."},
        {"match": ".*", "reply": "I can help with orders and appointments."},
    ],
}


@pytest.fixture
def sim_settings(tmp_path: Path) -> Settings:
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump(DEMO_SCRIPT))
    from tests.support.db import migrated_copy  # the plugin, registered above

    db = migrated_copy(tmp_path / "vocero.db", driver="sqlite+aiosqlite")  # its schema at head
    return Settings(runners="sim", db=db,
                    sim_script=str(script), operator_token="op-admin-token")


def write_script(path: Path, script: dict[str, object]) -> str:
    path.write_text(yaml.safe_dump(script))
    return str(path)


@pytest.fixture
def client(sim_settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(sim_settings)) as test_client:
        yield test_client



@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
