"""``vocero serve --print-config``: each setting's value and source, secrets never shown."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.process


def run(*flags: str, env: dict[str, str]) -> dict[str, dict[str, object]]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("VOCERO_")}
    done = subprocess.run(
        [sys.executable, "-m", "vocero", "serve", "--print-config", *flags],
        capture_output=True, text=True, timeout=60, env={**clean, **env})
    assert done.returncode == 0, done.stderr
    for secret in ("op-secret-42", "pw-secret-42", "sk-secret-42"):
        assert secret not in done.stdout + done.stderr
    config: dict[str, dict[str, object]] = json.loads(done.stdout)
    return config


def test_sources_flag_env_default_and_redaction() -> None:
    config = run(
        "--port", "9100", "--operator-token=op-secret-42",
        "--db", "postgresql://vocero:pw-secret-42@db.internal/vocero",
        env={"VOCERO_MAX_SESSIONS": "7", "VOCERO_PORT": "9999",
             "VOCERO_LLM_API_KEY": "sk-secret-42"},
    )
    assert config["port"] == {"value": 9100, "source": "flag"}  # a flag beats its env twin
    assert config["max_sessions"] == {"value": 7, "source": "env", "env": "VOCERO_MAX_SESSIONS"}
    assert config["host"] == {"value": "127.0.0.1", "source": "default"}
    assert config["operator_token"] == {"value": "[redacted]", "source": "flag"}
    assert config["db"] == {"value": "postgresql://vocero:***@db.internal/vocero",
                            "source": "flag"}
    assert config["llm_api_key"] == {"value": "[redacted]", "source": "env"}
    assert config["stt_api_key"] == {"value": None, "source": "default"}
    assert str(config["profiles"]["resolved"]).endswith("fixtures/profiles")


def test_unset_token_is_shown_as_unset() -> None:
    config = run(env={"VOCERO_RUNNERS": "sim", "VOCERO_TOOL_APPROVAL": "review"})
    assert config["operator_token"] == {"value": None, "source": "default"}
    assert config["tool_approval"] == {"value": "review", "source": "env",
                                       "env": "VOCERO_TOOL_APPROVAL"}
    assert config["runners"] == {"value": "sim", "source": "env", "env": "VOCERO_RUNNERS"}
