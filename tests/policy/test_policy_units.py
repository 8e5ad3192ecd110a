"""Sans-IO parts of the action path: canonical arguments, read-backs, the permit gate, the
evidence and operation tables, and the confirmation judgement."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vocero.contracts.domain import AgentProfile, Principal, ProfileMatch, ToolSpec
from vocero.policy import operations
from vocero.policy.canonical import CanonicalError, Context, canonicalize
from vocero.policy.confirmations import Question, judge
from vocero.policy.evidence import DELIVERY_EVENTS, TRANSITIONS, Ev, Step, apply, supersede
from vocero.policy.gate import (
    ConfirmationFacts,
    PermitRequest,
    arguments_hash,
    binding_hash,
    permit,
    resolve,
)
from vocero.policy.readback import outcome, readback

# Thursday 2026-12-03, 09:30 in Madrid
NOW = datetime(2026, 12, 3, 8, 30, tzinfo=UTC)
CTX = Context(tenant="acme", timezone="Europe/Madrid", now=NOW, server="appointments")
SCHEMA = {
    "type": "object",
    "properties": {
        "appointment_id": {"type": "string", "pattern": "^APT-[0-9]{1,8}$"},
        "new_date": {"type": "string", "format": "date"},
        "new_time": {"type": "string"},
        "timezone": {"type": "string"},
        "expected_version": {"type": "integer"},
    },
    "required": ["appointment_id", "new_date", "new_time", "timezone", "expected_version"],
}


# ------------------------------------------------------------------------------ canonical


@pytest.mark.parametrize(
    ("said", "iso"),
    [
        ("friday at 3pm", "2026-12-04T15:00:00+01:00"),
        ("next tuesday at 2 pm", "2026-12-08T14:00:00+01:00"),
        ("tomorrow, at 10:30", "2026-12-04T10:30:00+01:00"),
        ("2026-12-08T14:00:00", "2026-12-08T14:00:00+01:00"),  # no offset: the caller's clock
        ("2026-12-08T14:00:00-06:00", "2026-12-08T14:00:00-06:00"),
    ],
)
def test_a_date_time_field_is_one_moment_in_the_callers_timezone(said: str, iso: str) -> None:
    schema = {"type": "object", "properties": {"starts_at": {"type": "string",
                                                             "format": "date-time"}}}
    assert canonicalize({"starts_at": said}, schema, CTX).arguments["starts_at"] == iso


@pytest.mark.parametrize("said", ["sometime soon", "friday", "at 27 pm on friday"])
def test_a_date_time_without_a_day_and_a_time_is_asked_again(said: str) -> None:
    schema = {"type": "object", "properties": {"starts_at": {"type": "string",
                                                             "format": "date-time"}}}
    with pytest.raises(CanonicalError) as raised:
        canonicalize({"starts_at": said}, schema, CTX)
    assert raised.value.field == "starts_at" and "day and the time" in raised.value.question


@pytest.mark.parametrize(
    ("said", "iso"),
    [
        ("friday", "2026-12-04"),
        ("next thursday", "2026-12-10"),  # today is Thursday: the next one
        ("tomorrow", "2026-12-04"),
        ("today", "2026-12-03"),
        ("December 24", "2026-12-24"),
        ("5th of January", "2027-01-05"),  # already past this year: next year
        ("jan 5, 2027", "2027-01-05"),
        ("2026-12-07", "2026-12-07"),
    ],
)
def test_dates_resolve_in_the_callers_timezone(said: str, iso: str) -> None:
    args = {"appointment_id": "apt 1001", "new_date": said, "new_time": "3pm",
            "expected_version": "2"}
    canonical = canonicalize(args, SCHEMA, CTX)
    assert canonical.arguments == {
        "appointment_id": "APT-1001", "new_date": iso, "new_time": "15:00",
        "timezone": "Europe/Madrid", "expected_version": 2,
    }
    assert canonical.target_resource == "appointments/appointment_id=APT-1001"
    assert canonical.object_version == "2"


def test_late_evening_utc_is_already_tomorrow_in_the_callers_zone() -> None:
    late = Context(tenant="acme", timezone="Asia/Tokyo",
                   now=datetime(2026, 12, 3, 20, 0, tzinfo=UTC))
    args = {"appointment_id": "APT-1", "new_date": "today", "new_time": "10:00",
            "expected_version": 1}
    assert canonicalize(args, SCHEMA, late).arguments["new_date"] == "2026-12-04"
    assert canonicalize(args, SCHEMA, late).arguments["timezone"] == "Asia/Tokyo"


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"new_date": "sometime", "new_time": "10:00"}, "new_date"),
        ({"new_date": "12/05", "new_time": "10:00"}, "new_date"),  # US or European? ask
        ({"new_date": "friday", "new_time": "3"}, "new_time"),  # 3 am or 3 pm? ask
        ({"new_date": "friday", "new_time": "10:00", "appointment_id": "my boiler one"},
         "appointment_id"),
        ({"new_date": "friday", "new_time": "10:00", "timezone": "Mars/Olympus"}, "timezone"),
    ],
)
def test_ambiguous_values_are_asked_for(args: dict[str, str], field: str) -> None:
    full = {"appointment_id": "APT-1001", "expected_version": 1, **args}
    with pytest.raises(CanonicalError) as problem:
        canonicalize(full, SCHEMA, CTX)
    assert problem.value.field == field
    assert "?" in problem.value.question


def test_missing_required_arguments_are_asked_for() -> None:
    with pytest.raises(CanonicalError) as problem:
        canonicalize({"new_date": "friday", "new_time": "10:00"}, SCHEMA, CTX)
    assert problem.value.field == "appointment_id"


def test_observed_version_wins_and_principal_keys_never_pass() -> None:
    ctx = Context(tenant="acme", timezone="UTC", now=NOW, server="appointments",
                  observed_versions={"APT-1001": 7})
    args = {"appointment_id": "APT-1001", "new_date": "friday", "new_time": "noon",
            "expected_version": 1, "subject_ref": "sub_x", "scopes": ["admin"],
            "tenant_id": "globex"}
    canonical = canonicalize(args, SCHEMA, ctx)
    assert canonical.arguments["expected_version"] == 7
    assert canonical.arguments["tenant_id"] == "acme"
    assert canonical.claimed_tenant == "globex"
    assert set(canonical.dropped) == {"subject_ref", "scopes"}
    assert "scopes" not in canonical.arguments


def test_amounts_carry_their_currency() -> None:
    schema = {"properties": {"amount": {"type": "string"}, "currency": {"type": "string"}}}
    assert canonicalize({"amount": "€12.5"}, schema, CTX).arguments == {
        "amount": {"amount": "12.50", "currency": "EUR"}}
    assert canonicalize({"amount": "12,5", "currency": "eur"}, schema, CTX).arguments == {
        "amount": "12.50", "currency": "EUR"}
    with pytest.raises(CanonicalError):
        canonicalize({"amount": "12.50"}, schema, CTX)


# ------------------------------------------------------------------------------- readback


def test_readback_and_results_are_spoken_from_canonical_fields() -> None:
    args = {"appointment_id": "APT-1001", "new_date": "2026-12-04", "new_time": "15:30",
            "timezone": "Europe/Madrid", "expected_version": 2}
    spoken = readback("reschedule_appointment", args)
    assert spoken.text == (
        "To confirm: reschedule appointment APT-1001 to Friday, December 4, 2026 at "
        "3:30 PM, Madrid time. Shall I go ahead?")
    assert spoken.parts == ("APT-1001", "to Friday, December 4, 2026 at 3:30 PM, Madrid time")
    this_year = readback("reschedule_appointment", args, today=date(2026, 11, 30))
    assert "Friday, December 4 at 3:30 PM" in this_year.text, "the year only when it is not now"
    templated = readback("reschedule_appointment", args, today=date(2026, 11, 30),
                         template="move your appointment {appointment_id} to {when}")
    assert templated.text == ("To confirm: move your appointment APT-1001 to Friday, December 4 "
                              "at 3:30 PM, Madrid time. Shall I go ahead?")
    assert templated.parts == ("APT-1001", "Friday, December 4 at 3:30 PM, Madrid time")
    visit = {"visit_ref": "VX-2041", "starts_at": "2026-12-08T14:00:00-06:00"}
    moment = readback("move_visit", visit, today=date(2026, 12, 2),
                      template="move {visit_ref} to {starts_at}")
    assert moment.text == ("To confirm: move VX-2041 to Tuesday, December 8 at 2 PM. "
                           "Shall I go ahead?"), "a date-time placeholder is said in words"
    raw = readback("crm_update_v2", {"ticket_id": "T-9", "priority": "high"})
    assert "crm" not in raw.text.lower() and "update_v2" not in raw.text
    assert outcome("reschedule_appointment", args, "committed").startswith(
        "Done: your appointment APT-1001 is rescheduled to Friday")
    assert outcome("reschedule_appointment", args, "unknown").startswith("I have requested")
    assert "changed in the meantime" in outcome("reschedule_appointment", args, "rejected",
                                                "stale_version")


# ----------------------------------------------------------------------------------- gate

SPECS = [
    ToolSpec(name="orders.status", server="orders", resolves_to="get_order_status",
             action_class="read", required_scopes=["orders:read"]),
    ToolSpec(name="appointments.reschedule", server="appointments",
             resolves_to="reschedule_appointment", action_class="reversible_write",
             requires_confirmation=True, required_scopes=["appointments:write"]),
    ToolSpec(name="appointments.cancel", server="appointments", resolves_to="cancel_appointment",
             action_class="irreversible", required_scopes=["appointments:cancel"]),
    ToolSpec(name="appointments.tidy", server="appointments", resolves_to="cancel_appointment",
             action_class="read", required_scopes=[]),
    ToolSpec(name="account.close", server="admin", resolves_to="delete_account",
             action_class="prohibited"),
    ToolSpec(name="followups.record", server="vocero", resolves_to="followups.record",
             action_class="reversible_write", required_scopes=["followups:write"]),
]
PROFILE = AgentProfile(id="p", version="3", match=ProfileMatch(tenant="acme"), tools=SPECS)
ALICE = Principal(subject_ref="sub_a", tenant_id="acme",
                  scopes=["orders:read", "appointments:write", "followups:write"])


def request(tool: str, **changes: object) -> PermitRequest:
    base: dict[str, object] = {"stage": "propose", "tenant": "acme", "principal": ALICE,
                               "profile_version": "3", "tool": resolve(PROFILE, tool)}
    return PermitRequest(**{**base, **changes})  # type: ignore[arg-type]


def test_alias_is_judged_by_what_it_resolves_to() -> None:
    tidy = resolve(PROFILE, "appointments.tidy")
    assert tidy is not None
    assert (tidy.action_class, tidy.requires_confirmation) == ("irreversible", True)
    assert tidy.required_scopes == {"appointments:cancel"}
    assert permit(request("appointments.tidy")).reason == "scope_missing"


@pytest.mark.parametrize(
    ("tool", "changes", "outcome_", "reason"),
    [
        ("orders.status", {}, "allow", ""),
        ("nope.tool", {}, "deny", "tool_not_allowed"),
        ("account.close", {}, "deny", "prohibited"),
        ("appointments.cancel", {}, "deny", "scope_missing"),
        ("appointments.reschedule", {}, "confirm", "confirmation_missing"),
        ("appointments.reschedule", {"claimed_tenant": "globex"}, "deny",
         "cross_tenant_target"),
        ("orders.status", {"policy_available": False}, "deny", "authorization_unavailable"),
        ("orders.status", {"schema_version": None}, "deny", "tool_unavailable"),
        ("followups.record", {}, "allow", ""),
        ("orders.status", {"principal": Principal(subject_ref="s", tenant_id="globex",
                                                  scopes=["orders:read"])},
         "deny", "cross_tenant_target"),
    ],
)
def test_permit_at_proposal(tool: str, changes: dict[str, object], outcome_: str,
                            reason: str) -> None:
    decision = permit(request(tool, **changes))
    assert (decision.outcome, decision.reason) == (outcome_, reason)


def executing(**changes: object) -> PermitRequest:
    tool = resolve(PROFILE, "appointments.reschedule")
    assert tool is not None
    digest = arguments_hash(tool, "sch_1", {"appointment_id": "APT-1"})
    binding = binding_hash(proposal_id="prp_1", revision=2, arguments_digest=digest,
                           principal=ALICE, expires_at=1000.0, workflow_revision="p@3/v1")
    facts = ConfirmationFacts(status="pending", binding_hash=binding, revision=2,
                              expires_at=1000.0)
    base: dict[str, object] = {
        "stage": "execute", "revision": 2, "current_revision": 2, "expected_binding": binding,
        "confirmation": facts, "evidence_satisfied": True, "now": 999.0,
    }
    return request("appointments.reschedule", **{**base, **changes})


def test_permit_at_execution() -> None:
    assert permit(executing()).allowed
    facts = executing().confirmation
    assert facts is not None
    cases = {
        "proposal_changed": [{"current_revision": 3}, {"expected_binding": "other"},
                             {"arguments_match": False}],
        "authorization_expired": [{"now": 1000.0}],
        "required_delivery_missing": [{"evidence_satisfied": False}],
        "confirmation_missing": [{"confirmation": None}],
        "confirmation_used": [{"confirmation": ConfirmationFacts(
            status="used", binding_hash=facts.binding_hash, revision=2, expires_at=1000.0)}],
    }
    for reason, variants in cases.items():
        for changes in variants:
            assert permit(executing(**changes)).reason == reason, changes


def test_binding_covers_principal_and_expiry() -> None:
    digest = "d" * 64
    base = {"proposal_id": "prp_1", "revision": 1, "arguments_digest": digest,
            "principal": ALICE, "expires_at": 10.0, "workflow_revision": "w"}
    other = Principal(subject_ref="sub_b", tenant_id="acme", scopes=ALICE.scopes)
    reference = binding_hash(**base)  # type: ignore[arg-type]
    for change in ({"principal": other}, {"expires_at": 11.0}, {"revision": 2},
                   {"arguments_digest": "e" * 64}):
        assert binding_hash(**{**base, **change}) != reference  # type: ignore[arg-type]


# ------------------------------------------------------------------------------- evidence

GENERATIONS = st.sampled_from(["g1", "g2", "g3"])
EVENTS = st.lists(st.tuples(st.sampled_from(DELIVERY_EVENTS), GENERATIONS), max_size=12)


@given(EVENTS)
def test_only_the_current_generations_delivery_satisfies(trace: list[tuple[Ev, str]]) -> None:
    step = Step("prp_1", 1)
    canceled: set[str] = set()
    for event, generation in trace:
        if event is Ev.DELIVERED and generation in canceled:
            continue  # the coordinator drops late completions of canceled generations
        if event is Ev.NOT_DELIVERED:
            canceled.add(generation)
        before = step
        step = apply(step, event, generation)
        if step.satisfied and not before.satisfied:
            assert event is Ev.DELIVERED
            assert generation == step.generation_id
            assert generation not in canceled
    assert supersede(step).satisfied is False
    assert apply(supersede(step), Ev.SPOKEN, "g9").status == "invalidated"


def test_evidence_table_is_total() -> None:
    statuses = ("missing", "in_progress", "satisfied", "invalidated", "unobservable")
    assert {(s, e) for s in statuses for e in Ev} == set(TRANSITIONS)


def test_unobservable_delivery_never_counts_as_delivered() -> None:
    step = apply(apply(Step("p", 1), Ev.SPOKEN, "g1"), Ev.UNOBSERVED, "g1")
    assert step.status == "unobservable"
    assert not apply(step, Ev.DELIVERED, "g1").satisfied


# ----------------------------------------------------------------------------- operations


@given(st.sampled_from(sorted(operations.TERMINAL)),
       st.sampled_from(["authorized", "dispatch_pending", "in_flight", "unknown", "committed",
                        "rejected"]))
def test_terminal_operations_never_move(current: str, new: str) -> None:
    with pytest.raises(operations.InvalidOperationTransition):
        operations.check(current, new)  # type: ignore[arg-type]


def test_unknown_is_only_left_by_reconciliation_outcomes() -> None:
    leaving = {new for current, new in operations.TRANSITIONS if current == "unknown"}
    assert leaving == {"committed", "in_flight", "unknown", "rejected"}
    assert ("unknown", "dispatch_pending") not in operations.TRANSITIONS


# -------------------------------------------------------------------------- confirmations

QUESTION = Question(proposal_id="prp_1", revision=2, tool="t", summary="s", expires_at=100.0,
                    asked_turn_id="turn_1")


def answer(**changes: object) -> tuple[bool, str]:
    base: dict[str, object] = {
        "proposal_id": "prp_1", "revision": 2, "answer": "confirm", "source": "speech",
        "turn_id": "turn_2", "now": 50.0, "delivered": True,
        "current_revisions": {"prp_1": 2}, "used": set(),
    }
    question = changes.pop("question", QUESTION)
    judged = judge(question, **{**base, **changes})  # type: ignore[arg-type]
    return judged.binds, judged.reason


def test_confirmation_judgement() -> None:
    assert answer() == (True, "")
    assert answer(answer="reject", delivered=False) == (True, "")
    assert answer(answer="uncertain") == (False, "confirmation_unclear")
    assert answer(question=None) == (False, "no_active_question")
    assert answer(revision=1) == (False, "proposal_changed")
    assert answer(proposal_id="prp_9") == (False, "no_active_question")
    assert answer(turn_id="turn_1") == (False, "confirmation_unclear")
    assert answer(now=100.0) == (False, "authorization_expired")
    assert answer(delivered=False) == (False, "required_delivery_missing")
    assert answer(question=None, used={("prp_1", 2)}) == (False, "confirmation_used")
