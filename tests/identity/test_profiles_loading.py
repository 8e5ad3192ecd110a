"""Agent profile files (SPEC §5): loading, path resolution, and errors naming file and field."""

from __future__ import annotations

import copy
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from vocero.contracts.errors import ConfigError
from vocero.identity.profiles import load_profile, load_profiles

FIXTURES = Path(__file__).parents[2] / "fixtures"

BASE: dict[str, Any] = {
    "id": "p",
    "version": "1",
    "match": {"tenant": "acme", "roles": ["customer"]},
    "mcp_servers": {"orders": {"command": "python", "args": ["./orders.py"]}},
    "tools": [
        {
            "name": "orders.status",
            "server": "orders",
            "resolves_to": "get_order_status",
            "action_class": "read",
            "required_scopes": ["orders:read"],
        },
        {
            "name": "followups.record",
            "server": "vocero",
            "resolves_to": "followups.record",
            "action_class": "reversible_write",
        },
    ],
}


def _profile(**changes: Any) -> dict[str, Any]:
    document = copy.deepcopy(BASE)
    document.update(changes)
    return document


def _write(folder: Path, document: Any, name: str = "p.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "orders.py").touch()
    file = folder / name
    file.write_text(document if isinstance(document, str) else yaml.safe_dump(document))
    return file


def _error(file: Path) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_profiles(file.parent)
    assert caught.value.path == str(file)
    assert str(file) in str(caught.value)
    assert caught.value.field in str(caught.value)
    return caught.value


def _tool(index: int, **changes: Any) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = copy.deepcopy(BASE["tools"])
    tools[index].update(changes)
    return tools


def _copy_fixtures(tmp_path: Path) -> Path:
    """The fixture profiles next to stand-in servers, independent of the real server scripts."""
    shutil.copytree(FIXTURES / "profiles", tmp_path / "profiles")
    (tmp_path / "mcp_servers").mkdir()
    for name in ("orders", "appointments", "admin", "calls", "clinic"):
        (tmp_path / "mcp_servers" / f"{name}_server.py").touch()
    return tmp_path / "profiles"


def test_fixture_profiles_load_cleanly(tmp_path: Path) -> None:
    catalog = load_profiles(_copy_fixtures(tmp_path))
    assert sorted((p.id, p.version) for p in catalog) == [
        ("demo", "1"), ("globex", "1"), ("harbor", "1"),
    ]


def test_fixture_demo_profile_content(tmp_path: Path) -> None:
    demo = load_profiles(_copy_fixtures(tmp_path)).get("demo")
    assert demo is not None
    assert (demo.match.tenant, demo.match.roles) == ("acme", ["customer", "agent"])
    assert (demo.min_interruption_ms, demo.max_lead_ms, demo.word_budget) == (200, 400, 60)
    assert demo.voice is None
    assert demo.locale == "en-US"
    assert demo.instructions
    assert demo.rules
    classes = {t.name: (t.server, t.resolves_to, t.action_class) for t in demo.tools}
    assert classes == {
        "orders.status": ("orders", "get_order_status", "read"),
        "appointments.list": ("appointments", "list_appointments", "read"),
        "appointments.reschedule": ("appointments", "reschedule_appointment", "reversible_write"),
        "appointments.cancel": ("appointments", "cancel_appointment", "irreversible"),
        "account.close": ("admin", "delete_account", "prohibited"),
        "followups.record": ("vocero", "followups.record", "reversible_write"),
        "knowledge.search": ("vocero", "knowledge.search", "read"),
        "calls.place": ("calls", "place_call", "reversible_write"),
    }
    assert all(t.description for t in demo.tools)


def test_fixture_demo_tool_governance(tmp_path: Path) -> None:
    demo = load_profiles(_copy_fixtures(tmp_path)).get("demo")
    assert demo is not None
    status = demo.tool("orders.status")
    cancel = demo.tool("appointments.cancel")
    reschedule = demo.tool("appointments.reschedule")
    assert status
    assert status.idempotent
    assert status.timeout_ms == 3000
    assert status.required_scopes == ["orders:read"]
    assert cancel
    assert cancel.requires_confirmation
    assert cancel.required_scopes == ["appointments:cancel"]
    assert cancel.lookup_tool == "lookup_operation"
    assert reschedule
    assert reschedule.requires_confirmation
    assert reschedule.lookup_tool
    followup = demo.tool("followups.record")
    assert followup
    assert not followup.requires_confirmation
    assert followup.required_scopes == ["followups:write"]


def test_fixture_servers_resolve_next_to_the_fixtures(tmp_path: Path) -> None:
    demo = load_profiles(_copy_fixtures(tmp_path)).get("demo")
    assert demo is not None
    for name in ("orders", "appointments", "admin", "calls"):
        server = demo.mcp_servers[name]
        assert server.command == sys.executable
        assert server.args == [str((tmp_path / "mcp_servers" / f"{name}_server.py").resolve())]


def test_shipped_fixture_profiles_load_with_the_real_servers() -> None:
    """Needs fixtures/mcp_servers/*_server.py, which the MCP fixture servers provide."""
    catalog = load_profiles(FIXTURES / "profiles")
    demo = catalog.get("demo")
    assert demo is not None
    expected = FIXTURES.resolve() / "mcp_servers" / "orders_server.py"
    assert demo.mcp_servers["orders"].args == [str(expected)]


def test_relative_paths_resolve_against_the_profile_file(tmp_path: Path) -> None:
    (tmp_path / "servers").mkdir()
    (tmp_path / "servers" / "run.sh").touch()
    (tmp_path / "servers" / "tool.py").touch()
    servers = {
        "a": {"command": "python", "args": ["-u", "./orders.py", "--flag", "/abs/kept"]},
        "b": {"command": "../servers/run.sh", "args": ["../servers/tool.py"]},
        "c": {"command": "node", "args": ["server.js"]},
        "web": {"url": "http://127.0.0.1:9000/mcp"},
    }
    file = _write(tmp_path / "profiles", _profile(mcp_servers=servers, tools=[]))
    specs = load_profile(file).mcp_servers
    here = file.parent.resolve()
    assert specs["a"].command == sys.executable
    assert specs["a"].args == ["-u", str(here / "orders.py"), "--flag", "/abs/kept"]
    assert specs["b"].command == str(tmp_path.resolve() / "servers" / "run.sh")
    assert specs["b"].args == [str(tmp_path.resolve() / "servers" / "tool.py")]
    assert (specs["c"].command, specs["c"].args) == ("node", ["server.js"])
    assert specs["web"].url == "http://127.0.0.1:9000/mcp"
    assert not specs["web"].command


@pytest.mark.parametrize(("written", "expected"), [(1, "1"), ("2", "2"), (10, "10")])
def test_version_may_be_an_int_or_a_string(tmp_path: Path, written: Any, expected: str) -> None:
    voice = {"profile_id": "narrator", "version": written}
    profile = load_profile(_write(tmp_path, _profile(version=written, voice=voice)))
    assert profile.version == expected
    assert profile.voice is not None
    assert profile.voice.version == expected


def _servers(**spec: Any) -> dict[str, Any]:
    return {"orders": {"command": "python", "args": ["./orders.py"], **spec}}


@pytest.mark.parametrize(
    ("changes", "field", "problem"),
    [
        pytest.param({"match": None}, "match", "Expected `object`", id="match-null"),
        pytest.param({"word_budget": "many"}, "word_budget", "Expected `int`", id="wrong-type"),
        pytest.param({"system_prompt": "x"}, "system_prompt", "unknown field", id="unknown-top"),
        pytest.param(
            {"tools": _tool(1, dangerous=True)}, "tools[1].dangerous", "unknown field", id="unknown"
        ),
        pytest.param(
            {"tools": _tool(0, action_class="delete")},
            "tools[0].action_class",
            "Invalid enum value",
            id="bad-action-class",
        ),
        pytest.param(
            {"tools": _tool(0, required_scopes="orders:read")},
            "tools[0].required_scopes",
            "Expected `array`",
            id="scopes-not-a-list",
        ),
        pytest.param(
            {"mcp_servers": _servers(args=[1])},
            "mcp_servers.orders.args[0]",
            "Expected `str`",
            id="server-arg-type",
        ),
        pytest.param(
            {"mcp_servers": _servers(cwd="/tmp")},
            "mcp_servers.orders.cwd",
            "unknown field",
            id="server-unknown-field",
        ),
        pytest.param(
            {"tools": _tool(0, server="billing")},
            "tools[0].server",
            "unknown server 'billing'",
            id="unknown-server",
        ),
        pytest.param(
            {"tools": _tool(1, resolves_to="shell.exec")},
            "tools[1].resolves_to",
            "not a built-in tool",
            id="unknown-builtin",
        ),
        pytest.param(
            {"tools": _tool(1, name="orders.status")},
            "tools[1].name",
            "duplicate of tools[0].name",
            id="duplicate-tool",
        ),
        pytest.param({"tools": _tool(0, name=" ")}, "tools[0].name", "empty", id="empty-tool-name"),
        pytest.param(
            {"min_interruption_ms": 0}, "min_interruption_ms", "positive", id="zero-interruption"
        ),
        pytest.param({"max_lead_ms": -5}, "max_lead_ms", "positive", id="negative-lead"),
        pytest.param({"word_budget": 0}, "word_budget", "positive", id="zero-words"),
        pytest.param(
            {"tools": _tool(0, timeout_ms=0)}, "tools[0].timeout_ms", "positive", id="zero-timeout"
        ),
        pytest.param(
            {"mcp_servers": _servers(url="http://x")},
            "mcp_servers.orders",
            "exactly one of",
            id="url-and-command",
        ),
        pytest.param(
            {"mcp_servers": {"orders": {"url": "file:///etc/passwd"}}},
            "mcp_servers.orders.url",
            "http",
            id="bad-url",
        ),
        pytest.param(
            {"mcp_servers": {**_servers(), "vocero": {"url": "http://x"}}},
            "mcp_servers.vocero",
            "reserved",
            id="reserved-server-name",
        ),
        pytest.param(
            {"mcp_servers": _servers(args=["./missing_server.py"])},
            "mcp_servers.orders.args[0]",
            "no such file",
            id="missing-script",
        ),
        pytest.param(
            {"mcp_servers": _servers(command="../bin/absent")},
            "mcp_servers.orders.command",
            "no such file",
            id="missing-command",
        ),
        pytest.param({"followups": {"max_open_per_caller": 0}}, "followups.max_open_per_caller",
                     "positive", id="zero-open-per-caller"),
        pytest.param({"followups": {"max_per_session": -1}}, "followups.max_per_session",
                     "positive", id="negative-per-session"),
        pytest.param({"followups": {"max_per_tick": 0}}, "followups.max_per_tick", "positive",
                     id="zero-per-tick"),
        pytest.param({"followups": {"daily_budget": -3}}, "followups.daily_budget",
                     "negative", id="negative-budget"),
        pytest.param({"followups": {"caller_daily_share": 0}}, "followups.caller_daily_share",
                     "above 0 and at most 1", id="no-share"),
        pytest.param({"followups": {"caller_daily_share": 1.5}}, "followups.caller_daily_share",
                     "above 0 and at most 1", id="share-above-all"),
        pytest.param({"followups": {"caller_daily_share": ".5"}}, "followups.caller_daily_share",
                     "Expected `float`", id="share-not-a-number"),
        pytest.param({"followups": {"max_open": 3}}, "followups.max_open", "unknown field",
                     id="misspelt-cap"),
        pytest.param({"vocabulary": ["APT-1001", " "]}, "vocabulary[1]", "must not be empty",
                     id="empty-vocabulary-term"),
        pytest.param({"vocabulary": ["one\ntwo"]}, "vocabulary[0]", "one phrase on one line",
                     id="vocabulary-term-on-two-lines"),
        pytest.param({"vocabulary": ["x" * 65]}, "vocabulary[0]", "at most 64 characters",
                     id="vocabulary-prose"),
        pytest.param({"vocabulary": [f"term {i}" for i in range(201)]}, "vocabulary",
                     "at most 200 entries", id="vocabulary-too-long"),
        pytest.param({"vocabulary": "APT-1001"}, "vocabulary", "Expected `array`",
                     id="vocabulary-not-a-list"),
        pytest.param({"id": ""}, "id", "empty", id="empty-id"),
        pytest.param({"version": 1.5}, "version", "Expected `str`", id="float-version"),
        pytest.param({"match": {"tenant": ""}}, "match.tenant", "empty", id="empty-tenant"),
        pytest.param(
            {"match": {"tenant": "acme", "role": "x"}},
            "match.role",
            "unknown field",
            id="match-key",
        ),
    ],
)
def test_invalid_profiles_name_file_and_field(
    tmp_path: Path, changes: dict[str, Any], field: str, problem: str
) -> None:
    error = _error(_write(tmp_path, _profile(**changes)))
    assert error.field == field
    assert problem in error.problem


@pytest.mark.parametrize("missing", ["id", "version", "match"])
def test_missing_required_fields(tmp_path: Path, missing: str) -> None:
    document = _profile()
    del document[missing]
    error = _error(_write(tmp_path, document))
    assert (error.field, error.problem) == (missing, "missing required field")


def test_missing_tool_field(tmp_path: Path) -> None:
    tools = _tool(0)
    del tools[0]["resolves_to"]
    error = _error(_write(tmp_path, _profile(tools=tools)))
    assert error.field == "tools[0].resolves_to"


def test_duplicate_id_and_version_across_files(tmp_path: Path) -> None:
    _write(tmp_path, _profile(), "a.yaml")
    second = _write(tmp_path, _profile(version=1), "b.yaml")
    error = _error(second)
    assert error.field == "id"
    assert "a.yaml" in error.problem


def test_same_id_with_another_version_is_fine(tmp_path: Path) -> None:
    _write(tmp_path, _profile(), "a.yaml")
    _write(tmp_path, _profile(version="2"), "b.yaml")
    assert len(load_profiles(tmp_path)) == 2


def test_only_yaml_files_are_profiles(tmp_path: Path) -> None:
    _write(tmp_path, _profile())
    (tmp_path / "notes.txt").write_text("not a profile")
    (tmp_path / "draft.yaml.bak").write_text("{{{")
    assert len(load_profiles(tmp_path)) == 1


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    error = _error(_write(tmp_path, "id: demo\nmatch: {tenant: [\n"))
    assert error.field.startswith("line ")
    assert "invalid YAML" in error.problem


def test_document_must_be_a_mapping(tmp_path: Path) -> None:
    assert _error(_write(tmp_path, "- demo\n")).field == "(document)"


def test_directory_must_exist_and_hold_profiles(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a directory"):
        load_profiles(tmp_path / "absent")
    with pytest.raises(ConfigError, match=r"no \*\.yaml profiles"):
        load_profiles(tmp_path)
