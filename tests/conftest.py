from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from starlette.testclient import TestClient

from vocero.app.server import create_app
from vocero.app.settings import REPO_ROOT, Settings

FIXTURES = REPO_ROOT / "fixtures"

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
    return Settings(runners="sim", db=f"sqlite+aiosqlite:///{tmp_path}/vocero.db",
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
