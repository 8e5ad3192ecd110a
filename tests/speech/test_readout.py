"""Read-outs a person would say: the demo profile's templates on the fixture servers' real result
shapes, a generic read-out that never speaks internal fields, relative dates in the caller's
timezone, lists summarised first, and failures the caller can act on."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from vocero.contracts.domain import AgentProfile, ToolSpec
from vocero.speech.model import ToolEvidence
from vocero.speech.readout import ReadoutContext, read_out

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)  # Tuesday, December 1
MADRID = ReadoutContext(now=NOW, timezone="Europe/Madrid", caller_words="")


def appointment(apt: str, day: str, at: str, service: str) -> dict[str, Any]:
    return {
        "appointment_id": apt, "date": day, "time": at, "timezone": "Europe/Madrid",
        "service": service, "status": "scheduled", "version": 1,
    }


APPOINTMENTS = {
    "appointments": [
        appointment("APT-1001", "2026-12-03", "10:00", "Boiler inspection"),
        appointment("APT-1002", "2026-12-10", "16:30", "Window repair"),
    ]
}
ORDER = {"order_id": "A123", "status": "shipped", "eta": "2026-12-02"}
INTERNAL = ("version", "Europe/Madrid", "APT-1001", "APT-1002", "timezone", "scheduled")


def call(tool: str, result: dict[str, Any] | None, **fields: Any) -> ToolEvidence:
    return ToolEvidence(tool_call_id="call_1", tool=tool, result=result, **fields)


def ctx(**changes: Any) -> ReadoutContext:
    fields: dict[str, Any] = {"now": NOW, "timezone": "Europe/Madrid", **changes}
    return ReadoutContext(**fields)


DEMO_TOOLS = ("orders.status", "appointments.list", "appointments.reschedule",
              "appointments.cancel", "account.close", "followups.record")


@pytest.mark.parametrize("name", DEMO_TOOLS)
def test_every_demo_tool_has_a_readout(demo: AgentProfile, name: str) -> None:
    tool = demo.tool(name)
    assert (tool is not None and "{" in tool.readout) or name == "account.close"


def test_the_list_of_appointments_leads_with_the_count(demo: AgentProfile) -> None:
    said = read_out(demo.tool("appointments.list"), call("appointments.list", APPOINTMENTS), ctx())
    assert said.kind == "tool_fact"
    assert said.text == (
        "You have two appointments: a boiler inspection on Thursday, December 3 at 10 AM "
        "and a window repair on Thursday, December 10 at 4:30 PM."
    )


def test_a_template_never_says_on_tomorrow(demo: AgentProfile) -> None:
    """The template's "on {date}" with tomorrow's date reads "tomorrow, December 3"."""
    later = ctx(now=datetime(2026, 12, 2, 9, 0, tzinfo=UTC))
    said = read_out(demo.tool("appointments.list"), call("appointments.list", APPOINTMENTS), later)
    assert "a boiler inspection tomorrow, December 3 at 10 AM" in said.text, said.text
    assert " on tomorrow" not in said.text


def test_a_record_kept_in_another_timezone_names_its_city_not_its_zone(
    demo: AgentProfile,
) -> None:
    said = read_out(
        demo.tool("appointments.list"), call("appointments.list", APPOINTMENTS),
        ctx(timezone="America/New_York"),
    )
    assert "10 AM Madrid time" in said.text
    assert "Europe/Madrid" not in said.text


def test_the_order_status_is_read_with_a_relative_date(demo: AgentProfile) -> None:
    said = read_out(
        demo.tool("orders.status"),
        call("orders.status", ORDER, arguments={"order_id": "A123"}),
        ctx(caller_words="what is the status of order A123"),
    )
    assert said.text == "Order A123 is shipped. Its delivery date is tomorrow, December 2."


def test_tomorrow_is_the_callers_tomorrow() -> None:
    late = datetime(2026, 12, 1, 23, 30, tzinfo=UTC)  # already December 2 in Madrid
    said = read_out(None, call("orders.status", ORDER, arguments={"order_id": "A123"}),
                    ctx(now=late, caller_words="order A123"))
    assert "today, December 2" in said.text


ONE_APPOINTMENT = {"appointments": APPOINTMENTS["appointments"][:1]}


@pytest.mark.parametrize("result", [APPOINTMENTS, ONE_APPOINTMENT])
def test_the_generic_readout_never_speaks_internal_fields(result: dict[str, Any]) -> None:
    said = read_out(None, call("appointments.list", result), ctx())
    assert said.text.startswith("You have ")
    assert "boiler inspection on Thursday, December 3 at 10 AM" in said.text
    for internal in INTERNAL:
        assert internal not in said.text, internal


def test_an_identifier_is_spoken_only_when_the_caller_used_it() -> None:
    record = {"appointment_id": "APT-1001", "status": "scheduled", "service": "Boiler check"}
    spec = ToolSpec(name="appointments.get", server="s", resolves_to="t", action_class="read")
    unused = read_out(spec, call("appointments.get", record), ctx(caller_words="my appointment"))
    assert "APT-1001" not in unused.text
    used = read_out(spec, call("appointments.get", record, arguments={
        "appointment_id": "APT-1001"}), ctx(caller_words="appointment APT-1001 please"))
    assert used.text.startswith("Appointment APT-1001")


def test_an_empty_list_says_there_is_none(demo: AgentProfile) -> None:
    said = read_out(demo.tool("appointments.list"), call("appointments.list", {
        "appointments": []}), ctx())
    assert said.text == "You have no appointments."


def test_a_long_list_stays_within_the_word_budget(demo: AgentProfile) -> None:
    many = {"appointments": [
        appointment(f"APT-{i}", f"2026-12-{10 + i:02d}", "09:00", "Boiler inspection")
        for i in range(8)
    ]}
    said = read_out(demo.tool("appointments.list"), call("appointments.list", many),
                    ctx(word_budget=40))
    assert said.text.startswith("You have eight appointments: ")
    assert len(said.text.split()) <= 40
    assert said.text.endswith("more.")


def test_a_not_found_read_asks_the_caller_to_check_the_number(demo: AgentProfile) -> None:
    failed = call(
        "orders.status", {"error": "refused"}, status="rejected", reason_code="refused",
        arguments={"order_id": "B52"},
    )
    said = read_out(demo.tool("orders.status"), failed, ctx(caller_words="status of order B52"))
    assert said.kind == "fallback"
    assert said.text == (
        "I couldn't find order B52 on your account — could you check the number?"
    )


def test_the_servers_error_code_decides_the_wording(demo: AgentProfile) -> None:
    failed = call("orders.status", {"error": "not_found: no order B52"}, status="rejected",
                  arguments={"order_id": "B52"})
    assert "couldn't find order B52" in read_out(
        demo.tool("orders.status"), failed, ctx(caller_words="order B52")).text
    stale = call("appointments.reschedule", {"error": "stale_version: current version is 3"},
                 status="rejected", arguments={"appointment_id": "APT-1001"})
    assert "changed in the meantime" in read_out(
        demo.tool("appointments.reschedule"), stale, ctx()).text


def test_an_unknown_outcome_is_never_read_as_done(demo: AgentProfile) -> None:
    unknown = call("appointments.cancel", None, status="unknown", reason_code="timeout")
    said = read_out(demo.tool("appointments.cancel"), unknown, ctx())
    assert said.kind == "fallback"
    assert "could not confirm whether that went through" in said.text


def test_a_write_is_read_from_its_receipt(demo: AgentProfile) -> None:
    receipt = {"operation_id": "op_1", "status": "rescheduled",
               "appointment": appointment("APT-1001", "2026-12-05", "12:00", "Boiler inspection")}
    result = {"summary": "Your appointment was moved.", "operation_id": "op_1",
              "receipt": receipt}
    said = read_out(demo.tool("appointments.reschedule"),
                    call("appointments.reschedule", result), ctx())
    assert said.kind == "outcome"
    assert said.text == "Done: your boiler inspection is now on Saturday, December 5 at 12 PM."


def test_a_recorded_follow_up_is_a_promise_and_an_unrecorded_one_is_not(
    demo: AgentProfile,
) -> None:
    spec = demo.tool("followups.record")
    made = {"followup_id": "fup_1", "due_at": "2026-12-02T11:00:00+01:00",
            "timezone": "Europe/Madrid", "channel": "phone", "state": "scheduled",
            "duplicate": False}
    said = read_out(spec, call("followups.record", made), ctx())
    assert (said.kind, said.text) == (
        "promise", "I've booked a call back for tomorrow, December 2 at 11 AM.")
    refused = read_out(spec, call("followups.record", {"recorded": False,
                                                       "result": "NOT recorded"}), ctx())
    assert refused.kind == "fallback"
    # As the executor hands it over: the store's answer is the write's receipt (issue #25).
    wrapped = {"summary": "Done.", "operation_id": "op_1", "receipt": made}
    said = read_out(spec, call("followups.record", wrapped), ctx())
    assert (said.kind, said.text) == (
        "promise", "I've booked a call back for tomorrow, December 2 at 11 AM.")


def test_a_follow_up_over_a_cap_says_no_more_can_be_booked(demo: AgentProfile) -> None:
    """Runners that leave the wording to the read-out (CPU) say why nothing was booked."""
    spec = demo.tool("followups.record")
    for reason, words in (("caller_limit", "no more can be booked"),
                          ("session_limit", "No more follow-ups can be booked in this call")):
        refused = call("followups.record", {"status": "NOT recorded", "reason": reason},
                       status="rejected", reason_code=reason)
        said = read_out(spec, refused, ctx())
        assert said.kind == "fallback"
        assert words in said.text and "Nothing was booked." in said.text, said.text


def test_an_empty_list_among_a_records_fields_is_one_field_not_the_result() -> None:
    # Was "You have no extras.": a stay with no extras read as an empty list result.
    record = {"confirmation": "LK30417", "guest": "Jordan Ames", "arrival": "2026-12-18",
              "nights": 3, "extras": [], "checkout_time": "11:00"}  # fmt: skip
    spec = ToolSpec(
        name="stay.find", server="s", resolves_to="t", action_class="read",
        readout="Reservation {confirmation} for {guest}: arriving {arrival} for {nights} nights.",
    )  # fmt: skip
    said = read_out(spec, call("stay.find", record), ctx())
    assert said.text.startswith("Reservation LK30417 for Jordan Ames: arriving")
    generic = ToolSpec(name="stay.find", server="s", resolves_to="t", action_class="read")
    text = read_out(generic, call("stay.find", record), ctx()).text
    assert not text.startswith("You have no") and "December 18" in text
    # The check-out time is no time of the arrival day (was "arrival is on ... at 11 AM").
    assert "December 18 at" not in text
