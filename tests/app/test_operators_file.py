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
    assert admin.roles == ["admin"]
    assert directory.authenticate("nope") is None


def test_a_bad_operator_entry_names_file_and_field(tmp_path: Path) -> None:
    file = tmp_path / "operators.yaml"
    file.write_text("- {token: t1, name: sam, roles: security}\n")
    with pytest.raises(ConfigError) as error:
        load_operators(str(file), "")
    assert error.value.path == str(file)
    assert "roles" in error.value.field
