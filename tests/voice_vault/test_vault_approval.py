"""The four-eyes rule and the version lifecycle table, sans IO."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vocero.voice_vault import VaultError
from vocero.voice_vault.approval import (
    APPROVER_ROLES,
    CONTROL_ROLES,
    OWNER_ROLE,
    TRANSITIONS,
    approval_role,
    is_complete,
    next_status,
)

ROLES = sorted(APPROVER_ROLES | {"viewer"})


def refused(operator: str, roles: list[str], existing: list[tuple[str, str]]) -> str:
    with pytest.raises(VaultError) as caught:
        approval_role(operator, roles, existing)
    return caught.value.code


def test_owner_plus_a_control_role_completes() -> None:
    for control in CONTROL_ROLES:
        first = [("olga", approval_role("olga", [OWNER_ROLE], []))]
        second = approval_role("sam", [control], first)
        assert is_complete([*first, ("sam", second)])


def test_the_same_operator_never_approves_twice() -> None:
    assert refused("olga", [OWNER_ROLE, "security"], [("olga", OWNER_ROLE)]) == "same_operator"


def test_the_same_role_twice_is_refused() -> None:
    assert refused("sara", ["security"], [("sam", "security")]) == "same_role"
    assert refused("omar", [OWNER_ROLE], [("olga", OWNER_ROLE)]) == "same_role"


def test_two_control_roles_without_the_owner_stay_pending() -> None:
    approvals = [("ada", approval_role("ada", ["admin"], []))]
    approvals.append(("sam", approval_role("sam", ["security"], approvals)))
    assert approvals == [("ada", "admin"), ("sam", "security")]
    assert not is_complete(approvals)
    approvals.append(("olga", approval_role("olga", [OWNER_ROLE], approvals)))
    assert is_complete(approvals)


def test_a_multi_role_operator_fills_the_open_slot() -> None:
    assert approval_role("x", [OWNER_ROLE, "security"], []) == OWNER_ROLE
    assert approval_role("y", [OWNER_ROLE, "security"], [("x", OWNER_ROLE)]) == "security"


def test_an_operator_without_an_approver_role_is_refused() -> None:
    assert refused("vic", ["viewer"], []) == "role_not_allowed"


def test_lifecycle_table() -> None:
    assert next_status("pending", "approval_complete") == "approved"
    assert next_status("approved", "revoke") == "revoked"
    with pytest.raises(VaultError, match="voice_revoked"):
        next_status("revoked", "approval_partial")
    with pytest.raises(VaultError, match="already_approved"):
        next_status("approved", "approval_partial")
    assert all(target != "pending" or source == "pending" for (source, _), target in
               TRANSITIONS.items())


@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d"]),
                          st.sets(st.sampled_from(ROLES), max_size=3)), max_size=8))
def test_any_sequence_keeps_operators_and_roles_distinct(
    attempts: list[tuple[str, set[str]]],
) -> None:
    approvals: list[tuple[str, str]] = []
    refusals: list[str] = []
    for operator, roles in attempts:
        try:
            approvals.append((operator, approval_role(operator, roles, approvals)))
        except VaultError as exc:
            refusals.append(exc.code)
    assert set(refusals) <= {"same_operator", "same_role", "role_not_allowed"}
    operators = [name for name, _ in approvals]
    roles_used = [role for _, role in approvals]
    assert len(set(operators)) == len(operators)
    assert len(set(roles_used)) == len(roles_used)
    expected = OWNER_ROLE in roles_used and bool(set(CONTROL_ROLES) & set(roles_used))
    assert is_complete(approvals) == expected
