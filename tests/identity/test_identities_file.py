"""The identities file (SPEC §4): loading, authentication, and errors that name file and field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from vocero.contracts.errors import ConfigError
from vocero.identity.identities import IdentityDirectory, load_identities, normalize_phone

FIXTURE = Path(__file__).parents[2] / "fixtures" / "identities.yaml"


def _caller(token: str = "t-1", **overrides: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "token": token,
        "subject": "s",
        "tenant": "acme",
        "roles": ["customer"],
        "scopes": ["orders:read"],
        "locale": "en-US",
        "timezone": "Europe/Madrid",
        "phone": "+34600000009",
    }
    entry.update(overrides)
    return entry


def _write(tmp_path: Path, document: Any) -> Path:
    file = tmp_path / "identities.yaml"
    file.write_text(document if isinstance(document, str) else yaml.safe_dump(document))
    return file


def _error(file: Path) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_identities(file)
    assert caught.value.path == str(file)
    assert str(file) in str(caught.value)
    assert caught.value.field in str(caught.value)
    return caught.value


def test_fixture_loads_every_demo_caller() -> None:
    directory = load_identities(FIXTURE)
    tokens = [
        "demo-token", "agent-token", "readonly-token", "globex-token", "nomatch-token",
        "harbor-token",
    ]
    callers = [directory.authenticate(token) for token in tokens]
    assert all(callers)
    assert len(directory) == len(tokens)


def test_demo_caller_has_the_documented_identity() -> None:
    alice = load_identities(FIXTURE).authenticate("demo-token")
    assert alice is not None
    assert (alice.subject, alice.tenant, alice.roles) == ("alice", "acme", ["customer"])
    assert alice.scopes == [
        "orders:read",
        "appointments:read",
        "appointments:write",
        "followups:write",
    ]
    assert (alice.timezone, alice.locale) == ("Europe/Madrid", "en-US")
    assert alice.phone.startswith("+")


def test_fixture_roles_and_tenants() -> None:
    directory = load_identities(FIXTURE)
    agent = directory.authenticate("agent-token")
    readonly = directory.authenticate("readonly-token")
    globex = directory.authenticate("globex-token")
    nomatch = directory.authenticate("nomatch-token")
    assert agent is not None
    assert agent.roles == ["agent"]
    assert "appointments:cancel" in agent.scopes
    assert readonly is not None
    assert readonly.scopes == ["orders:read"]
    assert globex is not None
    assert globex.tenant == "globex"
    assert nomatch is not None
    assert nomatch.tenant == "initech"


@pytest.mark.parametrize("token", ["", "unknown", "demo-token ", "DEMO-TOKEN", "demo-toke"])
def test_unknown_tokens_are_denied(token: str) -> None:
    assert load_identities(FIXTURE).authenticate(token) is None


def test_by_phone_ignores_punctuation() -> None:
    directory = load_identities(FIXTURE)
    alice = directory.by_phone("+34 600-000-001")
    assert alice is not None
    assert alice.subject == "alice"
    assert directory.by_phone("+34 000") is None
    assert directory.by_phone("") is None


def test_by_phone_first_listed_wins(tmp_path: Path) -> None:
    file = _write(tmp_path, {"callers": [_caller("a", subject="x"), _caller("b", subject="y")]})
    found = load_identities(file).by_phone("+34600000009")
    assert found is not None
    assert found.subject == "x"


def test_normalize_phone() -> None:
    assert normalize_phone(" +1 (212) 555-0102 ") == "+12125550102"
    assert normalize_phone("0034 600") == "0034600"
    assert normalize_phone("+") == ""


def test_directory_refuses_duplicate_tokens_when_built_directly() -> None:
    from vocero.contracts.domain import Caller

    caller = Caller(token="same", subject="s", tenant="t")
    with pytest.raises(ValueError, match="duplicate"):
        IdentityDirectory([caller, caller])


def test_optional_fields_take_defaults(tmp_path: Path) -> None:
    file = _write(tmp_path, {"callers": [{"token": "t", "subject": "s", "tenant": "acme"}]})
    caller = load_identities(file).authenticate("t")
    assert caller is not None
    assert (caller.roles, caller.scopes, caller.timezone, caller.locale) == ([], [], "UTC", "en-US")


@pytest.mark.parametrize(
    ("callers", "field", "problem"),
    [
        pytest.param(
            [_caller(), {"token": "x", "tenant": "acme"}],
            "callers[1].subject",
            "missing required field",
            id="missing-field",
        ),
        pytest.param(
            [_caller(roles=[1])], "callers[0].roles[0]", "Expected `str`", id="wrong-type"
        ),
        pytest.param(
            [_caller(tenant=["acme"])], "callers[0].tenant", "Expected `str`", id="wrong-type-list"
        ),
        pytest.param(
            [_caller(nickname="al")], "callers[0].nickname", "unknown field", id="unknown"
        ),
        pytest.param(
            [_caller("a"), _caller("b", timezone="Mars/Olympus")],
            "callers[1].timezone",
            "unknown IANA time zone",
            id="bad-timezone",
        ),
        pytest.param(
            [_caller(timezone="../../etc/passwd")],
            "callers[0].timezone",
            "unknown IANA",
            id="timezone-path",
        ),
        pytest.param(
            [_caller("a"), _caller("b"), _caller("a")],
            "callers[2].token",
            "duplicate of callers[0].token",
            id="duplicate-token",
        ),
        pytest.param([_caller("")], "callers[0].token", "must not be empty", id="empty-token"),
        pytest.param(
            [_caller(tenant=" ")], "callers[0].tenant", "must not be empty", id="no-tenant"
        ),
        pytest.param(
            [_caller(phone=34600000001)], "callers[0].phone", "quote", id="unquoted-phone"
        ),
        pytest.param("everyone", "callers", "Expected `array`", id="callers-not-a-list"),
    ],
)
def test_invalid_entries_name_file_and_field(
    tmp_path: Path, callers: Any, field: str, problem: str
) -> None:
    error = _error(_write(tmp_path, {"callers": callers}))
    assert error.field == field
    assert problem in error.problem


def test_duplicate_token_error_does_not_echo_the_token(tmp_path: Path) -> None:
    error = _error(
        _write(tmp_path, {"callers": [_caller("s3cr3t-value"), _caller("s3cr3t-value")]})
    )
    assert "s3cr3t-value" not in str(error)


def test_missing_callers_key(tmp_path: Path) -> None:
    error = _error(_write(tmp_path, {}))
    assert error.field == "callers"


def test_unknown_top_level_key(tmp_path: Path) -> None:
    error = _error(_write(tmp_path, {"callers": [], "operators": []}))
    assert (error.field, error.problem) == ("operators", "unknown field")


@pytest.mark.parametrize("document", ["- a\n- b\n", "", "just text\n"])
def test_document_must_be_a_mapping(tmp_path: Path, document: str) -> None:
    assert _error(_write(tmp_path, document)).field == "(document)"


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    error = _error(_write(tmp_path, "callers:\n  - token: [unclosed\n"))
    assert error.field.startswith("line ")
    assert "invalid YAML" in error.problem


def test_missing_file(tmp_path: Path) -> None:
    error = _error(tmp_path / "absent.yaml")
    assert "cannot read file" in error.problem
