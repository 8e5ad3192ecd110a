"""The permit gate (docs/architecture.md "The action path", ADR-0009): a pure function of trusted
facts, with reason codes.

``permit`` decides on the *resolved* server tool, never the model-facing name: a tool's class,
scopes and confirmation rule are the strictest the profile declares for that ``(server, tool)``
under any alias, and irreversible actions always need a confirmation. The model contributes a
tool name and arguments only; tenant, principal, scopes, class and outcome come from here.
Missing policy data denies (``authorization_unavailable``), it never allows.

The profile's required steps (ADR-0030) are facts of the request too (:class:`StepFact`): at
propose a failed step denies and the missing ones are named (a disclosure not heard yet makes
the write a question, so it can be spoken first); at execute every step must be satisfied.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Literal

from vocero.contracts.domain import ActionClass, AgentProfile, Principal
from vocero.store.hashchain import canonical_json

Outcome = Literal["allow", "confirm", "deny"]
Stage = Literal["propose", "execute"]
BUILTIN_SERVER = "vocero"
STRICTNESS: dict[str, int] = {"read": 0, "reversible_write": 1, "irreversible": 2, "prohibited": 3}


@dataclass(frozen=True, slots=True)
class ResolvedTool:
    """A model-facing tool after alias resolution, with the effective policy of its target."""

    name: str
    server: str
    tool: str
    action_class: ActionClass
    required_scopes: frozenset[str]
    requires_confirmation: bool
    idempotent: bool
    lookup_tool: str
    timeout_ms: int
    system_only: bool = False
    """The profile's ``followups.call_tool`` target: only Vocero itself may start it (a system
    action), never the model in a conversation."""

    @property
    def builtin(self) -> bool:
        return self.server == BUILTIN_SERVER

    @property
    def write(self) -> bool:
        return self.action_class != "read"


def resolve(profile: AgentProfile, name: str) -> ResolvedTool | None:
    """The profile's tool ``name`` resolved to its server tool, or ``None`` when not listed."""
    spec = profile.tool(name)
    if spec is None:
        return None
    target = (spec.server, spec.resolves_to)
    same = [t for t in profile.tools if (t.server, t.resolves_to) == target]
    strictest: ActionClass = max((t.action_class for t in same), key=STRICTNESS.__getitem__)
    scopes = frozenset(s for t in same for s in t.required_scopes)
    confirm = strictest == "irreversible" or any(t.requires_confirmation for t in same)
    call_tool = profile.tool(profile.followups.call_tool) if profile.followups.call_tool else None
    return ResolvedTool(
        name=spec.name, server=spec.server, tool=spec.resolves_to, action_class=strictest,
        required_scopes=scopes, requires_confirmation=confirm and strictest != "read",
        idempotent=spec.idempotent and all(t.idempotent for t in same),
        lookup_tool=spec.lookup_tool, timeout_ms=spec.timeout_ms,
        system_only=call_tool is not None and (call_tool.server, call_tool.resolves_to) == target,
    )


@dataclass(frozen=True, slots=True)
class ConfirmationFacts:
    """What trusted storage holds about the confirmation of the revision being executed."""

    status: str
    """``pending``, ``used``, ``expired``, ``invalidated``, ``rejected``; ``""`` when none."""
    binding_hash: str
    revision: int
    expires_at: float


@dataclass(frozen=True, slots=True)
class StepFact:
    """One required step of the resolved tool, as trusted storage (or the session) holds it."""

    id: str
    kind: Literal["disclosure", "verify_identity"]
    status: str = "missing"
    failed: bool = False

    @property
    def satisfied(self) -> bool:
        return self.status == "satisfied" and not self.failed

    @property
    def reason(self) -> str:
        """Why a write is refused while this step is not satisfied."""
        return "disclosure_not_heard" if self.kind == "disclosure" else "identity_not_verified"


@dataclass(frozen=True, slots=True)
class PermitRequest:
    stage: Stage
    tenant: str
    principal: Principal
    profile_version: str
    tool: ResolvedTool | None
    policy_available: bool = True
    """False when a fact the decision needs could not be read (store, gateway, definitions)."""
    schema_version: str | None = ""
    """The pinned definition hash of the resolved tool now; ``None`` when it is not callable."""
    claimed_tenant: str = ""
    arguments_match: bool = True
    """False when the stored canonical action no longer hashes as it did (schema changed)."""
    revision: int = 0
    current_revision: int = 0
    expected_binding: str = ""
    """The binding hash recomputed now from the stored canonical proposal."""
    confirmation: ConfirmationFacts | None = None
    evidence_satisfied: bool = False
    now: float = 0.0
    initiator: Literal["caller", "system"] = "caller"
    """``system``: an operation Vocero starts itself (``policy.system_actions``)."""
    steps: tuple[StepFact, ...] = ()
    """The profile's required steps that apply to the resolved tool (ADR-0030)."""


@dataclass(frozen=True, slots=True)
class Decision:
    outcome: Outcome
    reason: str = ""
    missing: tuple[str, ...] = ()
    """Required steps not satisfied yet (ids): what the conversation must still perform."""

    @property
    def allowed(self) -> bool:
        return self.outcome == "allow"


def permit(request: PermitRequest) -> Decision:
    """Every check, in order; the first that fails names the reason."""
    tool = request.tool
    if not request.policy_available:
        return Decision("deny", "authorization_unavailable")
    if tool is None:
        return Decision("deny", "tool_not_allowed")
    if tool.action_class == "prohibited":
        return Decision("deny", "prohibited")
    if tool.system_only != (request.initiator == "system"):
        return Decision("deny", "tool_not_allowed")
    if request.principal.tenant_id != request.tenant or (
        request.claimed_tenant and request.claimed_tenant != request.tenant
    ):
        return Decision("deny", "cross_tenant_target")
    if not tool.required_scopes <= set(request.principal.scopes):
        return Decision("deny", "scope_missing")
    if request.schema_version is None:
        return Decision("deny", "tool_unavailable")
    if not tool.write:
        return Decision("allow")
    failed = next((s for s in request.steps if s.failed), None)
    if failed is not None:
        return Decision("deny", failed.reason)
    if request.stage == "execute" and (
        request.revision != request.current_revision or not request.arguments_match
    ):
        return Decision("deny", "proposal_changed")
    if request.stage == "propose":
        return _proposed(tool, request.steps)
    if tool.requires_confirmation:
        confirmed = _confirmed(request)
        if not confirmed.allowed:
            return confirmed
    unsatisfied = next((s for s in request.steps if not s.satisfied), None)
    if unsatisfied is not None:
        return Decision("deny", unsatisfied.reason)
    return Decision("allow")


def _proposed(tool: ResolvedTool, steps: tuple[StepFact, ...]) -> Decision:
    """A write at propose: a question when it needs a confirmation or a disclosure must be
    heard first (it is spoken before the read-back), otherwise it may run (a missing
    verification is performed at execute, before the final gate)."""
    missing = tuple(s.id for s in steps if not s.satisfied)
    if tool.requires_confirmation:
        return Decision("confirm", "confirmation_missing", missing)
    disclosure = next(
        (s for s in steps if s.kind == "disclosure" and not s.satisfied), None
    )
    if disclosure is not None:
        return Decision("confirm", disclosure.reason, missing)
    return Decision("allow", "", missing)


def _confirmed(request: PermitRequest) -> Decision:
    confirmation = request.confirmation
    if confirmation is None or confirmation.status in ("", "rejected"):
        return Decision("deny", "confirmation_missing")
    if confirmation.status == "used":
        return Decision("deny", "confirmation_used")
    if confirmation.status == "invalidated" or confirmation.revision != request.current_revision:
        return Decision("deny", "proposal_changed")
    if confirmation.binding_hash != request.expected_binding:
        return Decision("deny", "proposal_changed")
    if confirmation.status == "expired" or request.now >= confirmation.expires_at:
        return Decision("deny", "authorization_expired")
    if not request.evidence_satisfied:
        return Decision("deny", "required_delivery_missing")
    return Decision("allow")


# --------------------------------------------------------------------------------- hashes


def digest(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def schema_version(input_schema: dict[str, Any] | None) -> str:
    """A version of a tool's pinned input schema (what arguments mean)."""
    return "sch_" + digest(input_schema or {})[:24]


def arguments_hash(tool: ResolvedTool, schema: str, arguments: dict[str, Any]) -> str:
    """Identity of one canonical action: the resolved tool, its schema and the arguments."""
    return digest({"server": tool.server, "tool": tool.tool, "class": tool.action_class,
                   "schema": schema, "arguments": arguments})


def binding_hash(
    *,
    proposal_id: str,
    revision: int,
    arguments_digest: str,
    principal: Principal,
    expires_at: float,
    workflow_revision: str,
) -> str:
    """What a confirmation binds to: this revision of this exact action, for this principal,
    until this instant. ``arguments_digest`` already covers the resolved tool and schema."""
    return digest({
        "proposal_id": proposal_id,
        "revision": revision,
        "action": arguments_digest,
        "principal": {"subject_ref": principal.subject_ref, "tenant_id": principal.tenant_id,
                      "scopes": sorted(principal.scopes)},
        "expires_at": round(expires_at, 3),
        "workflow_revision": workflow_revision,
    })
