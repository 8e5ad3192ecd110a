"""The four-eyes rule and the version lifecycle, sans IO.

**The rule.** A version is ``approved`` once it holds an approval in the ``business_owner`` role
and an approval in a control role (``security``, ``legal`` or ``admin``) from a *different*
operator. Each approval is recorded under one role:

* an operator approves a version at most once (``same_operator``), whatever roles they hold;
* the role recorded is one the operator holds that no earlier approval of the version holds:
  ``business_owner`` while the owner's approval is missing, else the first free control role in
  the order security, legal, admin; when every approver role the operator holds is taken, the
  approval is refused (``same_role``); an operator with no approver role is refused
  (``role_not_allowed``);
* so two approvals never share an operator or a role, and one person holding both
  ``business_owner`` and ``security`` still needs a second person.

Two control roles without the owner (say admin then security) leave the version ``pending``.

**Lifecycle.** ``pending`` → ``approved`` (rule satisfied) and ``pending``/``approved`` →
``revoked`` (the whole voice is revoked). ``revoked`` is final; approving an ``approved`` version
is refused (``already_approved``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Literal

from vocero.store.models.voices import VoiceVersionStatus
from vocero.voice_vault.errors import VaultCode, VaultError

OWNER_ROLE = "business_owner"
CONTROL_ROLES = ("security", "legal", "admin")
APPROVER_ROLES = frozenset({OWNER_ROLE, *CONTROL_ROLES})

Event = Literal["approval_partial", "approval_complete", "revoke"]

TRANSITIONS: dict[tuple[VoiceVersionStatus, Event], VoiceVersionStatus] = {
    ("pending", "approval_partial"): "pending",
    ("pending", "approval_complete"): "approved",
    ("pending", "revoke"): "revoked",
    ("approved", "revoke"): "revoked",
}


def next_status(status: VoiceVersionStatus, event: Event) -> VoiceVersionStatus:
    """The status after ``event``; :class:`VaultError` for a transition the lifecycle forbids."""
    try:
        return TRANSITIONS[(status, event)]
    except KeyError:
        code: VaultCode = "voice_revoked" if status == "revoked" else "already_approved"
        raise VaultError(code, f"{event} on a {status} version") from None


def approval_role(
    operator: str, roles: Iterable[str], existing: Collection[tuple[str, str]]
) -> str:
    """The role this operator's approval is recorded under, given the ``(operator, role)``
    approvals the version already holds."""
    if any(name == operator for name, _ in existing):
        raise VaultError("same_operator", "an operator approves a version once")
    held = APPROVER_ROLES.intersection(roles)
    if not held:
        raise VaultError("role_not_allowed", "no approver role")
    taken = {role for _, role in existing}
    for role in (OWNER_ROLE, *CONTROL_ROLES):
        if role in held and role not in taken:
            return role
    raise VaultError("same_role", "every approver role of this operator is already recorded")


def is_complete(approvals: Collection[tuple[str, str]]) -> bool:
    """Whether ``(operator, role)`` approvals satisfy the four-eyes rule."""
    owners = {name for name, role in approvals if role == OWNER_ROLE}
    controls = {name for name, role in approvals if role in CONTROL_ROLES}
    return any(o != c for o in owners for c in controls)
