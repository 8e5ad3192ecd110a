"""The operators file is validated at load with errors naming the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from vocero.app.http.operators import load_operators
from vocero.contracts.errors import ConfigError


def test_operators_load_and_authenticate(tmp_path: Path) -> None:
    file = tmp_path / "operators.yaml"
    file.write_text("- {token: t1, name: sam, roles: [security]}\n")
    directory = load_operators(str(file), "admin-token")
    operator = directory.authenticate("t1")
    assert operator is not None
    assert operator.roles == ["security"]
    admin = directory.authenticate("admin-token")
    assert admin is not None
    assert admin.roles == ["admin", "platform_admin"]
    assert admin.scope.everywhere and operator.scope.everywhere  # no tenants: every tenant
    assert directory.authenticate("nope") is None


def test_operators_file_entries_may_carry_tenants(tmp_path: Path) -> None:
    file = tmp_path / "operators.yaml"
    file.write_text("- {token: t1, name: sam, roles: [security], tenants: [tenant-a]}\n"
                    "- {token: t2, name: pat, roles: [platform_admin], tenants: [tenant-a]}\n")
    directory = load_operators(str(file), "")
    scoped, platform = directory.authenticate("t1"), directory.authenticate("t2")
    assert scoped is not None and platform is not None
    assert scoped.scope.tenants == frozenset({"tenant-a"})
    assert scoped.scope.allows("tenant-a") and not scoped.scope.allows("tenant-b")
    assert not scoped.scope.allows(None)  # a row of no tenant (an auth denial's audit event)
    assert platform.scope.everywhere


def test_operator_jwks_needs_issuer_and_audience(tmp_path: Path) -> None:
    keys = tmp_path / "jwks.json"
    keys.write_text('{"keys": []}')
    with pytest.raises(ConfigError) as error:
        load_operators("", "", jwks=str(keys), issuer="https://idp.example.test/")
    assert error.value.field == "operator_audience"


def test_a_bad_operator_entry_names_file_and_field(tmp_path: Path) -> None:
    file = tmp_path / "operators.yaml"
    file.write_text("- {token: t1, name: sam, roles: security}\n")
    with pytest.raises(ConfigError) as error:
        load_operators(str(file), "")
    assert error.value.path == str(file)
    assert "roles" in error.value.field
