"""Each matcher form and each expectation check of docs/eval.md, on plain values."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import msgspec

from vocero.evals.client import TurnResult
from vocero.evals.expect import (
    Context,
    check_claims,
    check_confirmation,
    check_heard,
    check_rows,
    check_scenario,
    check_stopped,
    check_tools,
    check_turn,
)
from vocero.evals.format import Heard, ScenarioExpect, ToolExpect, TurnExpect
from vocero.evals.matchers import check_matcher, describe, matches, normalise, resolve_moment

# A Wednesday: 2026-12-02 10:00 UTC is 11:00 in Madrid.
NOW = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
CTX_ZONE = ZoneInfo("Europe/Madrid")
CTX = Context(zone="Europe/Madrid", now=NOW,
              aliases={"orders.status": {("orders", "get_order_status")}})


def test_a_plain_value_is_equal_after_normalising_case_and_spaces() -> None:
    assert matches("a123", "A123")
    assert matches("Order  shipped", "order shipped")
    assert not matches("A123", "A124")
    assert matches(1, 1) and not matches(1, 2)
    assert matches("2", 2)
    assert normalise("Hello,  World!") == "hello world"


def test_equals_is_exact() -> None:
    assert matches({"equals": "A123"}, "A123")
    assert not matches({"equals": "A123"}, "a123")
    assert matches({"equals": 1}, 1)


def test_contains_and_pattern() -> None:
    assert matches({"contains": "SHIPPED"}, "Order A123 is shipped.")
    assert not matches({"contains": "delivered"}, "Order A123 is shipped.")
    assert not matches({"contains": "x"}, 5)
    assert matches({"pattern": "^2026-12-1[0-9]$"}, "2026-12-14")
    assert matches({"pattern": "order"}, "ORDER")
    assert not matches({"pattern": "^A9"}, "A123")
    assert not matches({"pattern": "x"}, None)


def test_datetime_is_that_moment_in_the_callers_zone_or_a_named_one() -> None:
    # tomorrow 16:00 in Madrid is 15:00 UTC on 2026-12-03
    tomorrow = {"datetime": "tomorrow 16:00", "zone": "caller"}
    assert matches(tomorrow, "2026-12-03T16:00:00+01:00", caller_zone="Europe/Madrid", now=NOW)
    assert matches(tomorrow, "2026-12-03T15:00:00Z", caller_zone="Europe/Madrid", now=NOW)
    assert not matches(tomorrow, "2026-12-03T16:00:00Z", caller_zone="Europe/Madrid", now=NOW)
    assert matches({"datetime": "today 09:30", "zone": "America/New_York"},
                   "2026-12-02T14:30:00Z", now=NOW)
    # the next Friday after Wednesday 2 December; a weekday is never today
    assert matches({"datetime": "friday 15:00"}, "2026-12-04T15:00:00+01:00",
                   caller_zone="Europe/Madrid", now=NOW)
    assert resolve_moment("wednesday 08:00", CTX_ZONE, NOW).day == 9
    assert matches({"datetime": "2026-12-14 10:30"}, "2026-12-14T10:30:00+01:00",
                   caller_zone="Europe/Madrid", now=NOW)
    assert not matches({"datetime": "tomorrow 16:00"}, "not a time", now=NOW)
    assert not matches({"datetime": "tomorrow 16:00"}, "2026-12-03T16:00:00", now=NOW)


def test_present_absent_and_nested_rows() -> None:
    assert matches("present", "a reason") and not matches("present", "")
    assert matches("absent", None) and matches("absent", []) and not matches("absent", "x")
    assert matches({"tool": "a", "revision": 1}, {"tool": "A", "revision": 1, "extra": 2})


def test_check_matcher_names_what_is_wrong() -> None:
    assert check_matcher("A123") == "" and check_matcher({"pattern": "a+"}) == ""
    assert "one of" in check_matcher({"like": "A1"})
    assert "regular expression" in check_matcher({"pattern": "("})
    assert "unknown day" in check_matcher({"datetime": "someday 10:00"})
    assert "unknown zone" in check_matcher({"datetime": "today 10:00", "zone": "Mars/Base"})
    assert describe({"order_id": "A123"}) == "{order_id: A123}"


def test_heard_contains_not_contains_equals_pattern() -> None:
    text = "Order A123 is shipped."
    assert check_heard(Heard(contains=["a123 IS shipped"], not_contains=["version"]), text) == []
    failures = check_heard(Heard(contains=["delivered"], not_contains=["shipped"],
                                 equals="Order A123", pattern="^Your"), text)
    assert [f.expected for f in failures] == [
        "contains 'delivered'", "does not contain 'shipped'", "equals 'Order A123'",
        "matches /^Your/"]
    assert all(f.happened == repr(text) for f in failures)
    assert check_heard(Heard(contains=["x"]), "")[0].happened == "nothing"


def _unit(keys: list[str], disposition: str = "admitted") -> dict[str, Any]:
    return {"claim_keys": keys, "disposition": disposition, "kind": "claim"}


def test_claims_count_only_admitted_units() -> None:
    units = [_unit(["hours.saturday"]), _unit(["returns.window"], "refused")]
    assert check_claims(["hours.saturday"], ["returns.window"], units) == []
    failures = check_claims(["returns.window"], ["hours.saturday"], units)
    assert [f.what for f in failures] == ["claims returns.window", "no_claims hours.saturday"]


def _call(tool: str, server: str = "orders", status: str = "ok",
          **arguments: Any) -> dict[str, Any]:
    return {"tool": tool, "server": server, "arguments": arguments, "status": status}


def test_tools_exactly_once_by_server_or_model_facing_name() -> None:
    calls = [_call("get_order_status", order_id="A123")]
    by_server = ToolExpect(tool="get_order_status", arguments={"order_id": "A123"})
    by_model = ToolExpect(tool="orders.status", arguments={"order_id": {"pattern": "^A1"}})
    assert check_tools([by_server, by_model], ["cancel_appointment"], calls, CTX) == []
    twice = calls * 2
    failure = check_tools([by_server], [], twice, CTX)[0]
    assert failure.expected == "1 call with {order_id: A123}"
    assert failure.happened.startswith("2 calls with {order_id: A123}")
    at_least = msgspec.convert({"tool": "orders.status", "times": {"at_least": 2}}, ToolExpect)
    assert check_tools([at_least], [], twice, CTX) == []
    assert check_tools([at_least], [], calls, CTX)[0].expected == "at least 2 calls"


def test_a_changed_argument_says_what_was_expected_and_what_happened() -> None:
    calls = [_call("get_order_status", order_id="A123")]
    failure = check_tools([ToolExpect(tool="get_order_status", arguments={"order_id": "A999"})],
                          [], calls, CTX)[0]
    assert (failure.what, failure.expected, failure.happened) == (
        "tools get_order_status", "1 call with {order_id: A999}", "1 call with {order_id: A123}")


def test_tool_status_and_no_tools() -> None:
    calls = [_call("cancel_appointment", server="appointments", status="error")]
    ok = ToolExpect(tool="cancel_appointment", status="ok")
    assert check_tools([ok], [], calls, CTX)[0].happened.endswith("(error)")
    assert check_tools([ToolExpect(tool="cancel_appointment", status="error")], [], calls,
                       CTX) == []
    assert check_tools([], ["cancel_appointment"], calls, CTX)[0].what == (
        "no_tools cancel_appointment")
    assert check_tools([ToolExpect(tool="x")], [], [], CTX)[0].happened == "no call"


def test_confirmation_expected_or_not() -> None:
    asked = [{"tool": "appointments.reschedule", "revision": 2, "summary": "Move it?"}]
    assert check_confirmation(True, asked, CTX) == []
    assert check_confirmation(False, [], CTX) == []
    assert check_confirmation(False, asked, CTX)[0].expected == "no tool.confirmation_required.v1"
    assert check_confirmation(True, [], CTX)[0].happened == "no confirmation asked"
    assert check_confirmation({"revision": 2}, asked, CTX) == []
    assert check_confirmation({"revision": 1}, asked, CTX) != []


def test_stopped_and_budgets() -> None:
    turn = TurnResult(index=2, barged_at=1.0, barge_in_stop_ms=80.0, ttfa_ms=300.0,
                      stops=[{"generation_id": "gen_1", "reason": "barge_in"}])
    assert check_stopped(True, turn) == []
    assert check_turn(TurnExpect(stopped=True, barge_in_stop_ms=100, ttfa_ms=500), turn,
                      CTX) == []
    slow = check_turn(TurnExpect(barge_in_stop_ms=50, ttfa_ms=200), turn, CTX)
    assert [(f.what, f.turn) for f in slow] == [("ttfa_ms", 2), ("barge_in_stop_ms", 2)]
    assert "after 300 ms" in slow[0].happened
    turn.after_stop = ["response.audio_delta.v1"]
    assert "after it" in check_stopped(True, turn)[0].happened
    never = TurnResult(index=1)
    assert "ended before the barge-in" in check_stopped(True, never)[0].happened
    assert check_stopped(False, never) == []


def test_rows_match_distinct_rows_and_followups_due_in_the_callers_zone() -> None:
    rows = [{"tool": "appointments.reschedule", "status": "committed", "revision": 1}]
    want = [{"tool": "appointments.reschedule", "status": "committed"}]
    assert check_rows("operations", want, rows, CTX) == []
    assert len(check_rows("operations", want * 2, rows, CTX)) == 1
    followups = [{"channel": "phone", "status": "scheduled", "reason": "my invoice",
                  "due_at": "2026-12-03T16:00:00+01:00"}]
    expect = ScenarioExpect(
        followups=[{"channel": "phone", "due": "tomorrow 16:00", "reason": "present"}],
        findings={"promised_unbooked": 0})
    assert check_scenario(expect, turns=[], tools=[], units=[], operations=[],
                          followups=followups, findings=[], ctx=CTX) == []
    late = ScenarioExpect(followups=[{"due": "tomorrow 17:00"}], findings={"promised_unbooked": 0})
    failures = check_scenario(late, turns=[], tools=[], units=[], operations=[],
                              followups=followups,
                              findings=[{"kind": "promised_unbooked", "text": "I'll call"}],
                              ctx=CTX)
    assert [f.what for f in failures] == ["followups", "findings promised_unbooked"]
    assert "2026-12-03T16:00:00+01:00" in failures[0].happened


def test_calls_belong_to_the_sessions_caller() -> None:
    from vocero.evals.runner import _of_subject

    mine = {"meta": {"io.vocero/principal": {"subject_ref": "sub_a", "tenant_id": "acme"}}}
    theirs = {"meta": {"io.vocero/principal": {"subject_ref": "sub_b", "tenant_id": "acme"}}}
    assert _of_subject(mine, "sub_a") and not _of_subject(theirs, "sub_a")
    assert _of_subject({"meta": {}}, "sub_a") and _of_subject(theirs, "")


def test_rows_are_an_assignment_so_a_general_entry_first_leaves_the_specific_one_its_row() -> None:
    # Rows come newest first: the duplicate repeat, then the first booking.
    rows = [{"tool": "followups.record", "status": "committed", "receipt": {"duplicate": True}},
            {"tool": "followups.record", "status": "committed", "receipt": {"duplicate": False}}]
    general = {"tool": "followups.record", "status": "committed"}
    specific = {**general, "receipt": {"pattern": "'duplicate': True"}}
    assert check_rows("operations", [general, specific], rows, CTX) == []
    assert check_rows("operations", [specific, general], rows, CTX) == []
    twice = check_rows("operations", [specific, specific], rows, CTX)
    assert [f.expected for f in twice] == [describe(specific)]


def test_an_operation_names_the_profiles_tool_or_the_servers() -> None:
    ctx = Context(zone="Europe/Madrid", now=NOW, aliases={
        "appointments.reschedule": {("appointments", "reschedule_appointment")}})
    rows = [{"tool": "appointments.reschedule", "resolved_tool": "reschedule_appointment",
             "status": "committed"}]
    for name in ("appointments.reschedule", "reschedule_appointment"):
        assert check_rows("operations", [{"tool": name, "status": "committed"}], rows, ctx) == []
    assert check_rows("operations", [{"tool": {"contains": "reschedule_app"}}], rows, ctx) == []
    other = check_rows("operations", [{"tool": "cancel_appointment"}], rows, ctx)
    assert len(other) == 1 and "appointments.reschedule" in other[0].happened
    # Follow-up rows have no tool aliases: a plain field as before.
    assert len(check_rows("followups", [{"tool": "reschedule_appointment"}], rows, ctx)) == 1


def test_a_builtin_calls_arguments_are_the_operations_canonical_ones() -> None:
    from vocero.evals.format import Scenario
    from vocero.evals.runner import ScenarioResult, untapped_calls

    result = ScenarioResult(Scenario(name="x", file="x.yaml", turns=[]))
    result.operations = [
        {"operation_id": "op_1", "proposal_id": "prop_1", "tool": "followups.record",
         "resolved_tool": "followups.record", "status": "committed",
         "arguments": {"channel": "phone", "reason": "my invoice"},
         "created_at": "2026-12-02T10:00:00+00:00"},
        {"operation_id": "op_2", "proposal_id": None, "tool": "knowledge.search",
         "resolved_tool": "knowledge.search", "status": "committed", "arguments": None,
         "created_at": "2026-12-02T10:00:01+00:00"},
        {"operation_id": "op_3", "proposal_id": "prop_3", "tool": "followups.record",
         "resolved_tool": "followups.record", "status": "committed",
         "arguments": {"$purged": True}, "created_at": "2026-12-02T10:00:02+00:00"}]
    aliases = {"followups.record": {("vocero", "followups.record")},
               "knowledge.search": {("vocero", "knowledge.search")}}
    calls = untapped_calls(result, set(), aliases)
    assert [c["arguments"] for c in calls] == [
        {"channel": "phone", "reason": "my invoice"}, {}, {}]
    wanted = [ToolExpect(tool="followups.record",
                         arguments={"reason": {"contains": "invoice"}})]
    assert check_tools(wanted, [], calls, CTX) == []
    assert untapped_calls(result, {"vocero"}, aliases) == []


def test_the_operator_view_of_an_operation_lists_a_writes_canonical_arguments() -> None:
    from vocero.contracts.domain import Principal
    from vocero.policy.records import OperationRecord

    def record(proposal_id: str | None, arguments: dict[str, Any]) -> OperationRecord:
        return OperationRecord(
            id="op_1", session_id="s", proposal_id=proposal_id, revision=1, tenant_id="acme",
            tool="followups.record", server="vocero", resolved_tool="followups.record",
            arguments=arguments, principal=Principal(subject_ref="sub", tenant_id="acme",
                                                     scopes=[]),
            idempotent=True, status="committed", attempts=1, receipt=None, reason_code="",
            created_at=NOW, updated_at=NOW)

    write = record("prop_1", {"reason": "my invoice", "api_key": "k", "sensitive_note": "n"})
    assert write.public()["arguments"] == {"reason": "my invoice"}
    assert "principal" not in write.public()
    assert record(None, {"arguments_hash": "h"}).public()["arguments"] is None
