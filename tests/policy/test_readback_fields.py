"""A read-back template's ``{when}`` says the caller's value even when no field is a typed date or
time: a free-text field named ``when`` is read as it is, and counted among the values the caller
must hear before a "yes" binds (issue 42: the read-back said "move booking BK-101 to." and a yes
bound to a time nobody heard)."""

from __future__ import annotations

from datetime import date

from vocero.policy.readback import readback

TEMPLATE = "move booking {booking_ref} to {when}"


def test_a_free_text_when_field_is_said_and_must_be_heard() -> None:
    spoken = readback("bookings.shift", {"booking_ref": "BK-101", "when": "Friday at 11"},
                      template=TEMPLATE)
    assert spoken.text == "To confirm: move booking BK-101 to Friday at 11. Shall I go ahead?"
    assert "Friday at 11" in spoken.parts


def test_typed_date_and_time_fields_still_fill_when() -> None:
    spoken = readback("bookings.shift",
                      {"booking_ref": "BK-101", "date": "2026-12-11", "time": "11:00"},
                      template=TEMPLATE, today=date(2026, 12, 7))
    assert "to Friday, December 11 at 11 AM" in spoken.text
    assert any("December 11" in part for part in spoken.parts)


def test_a_record_named_by_its_code_is_the_object_and_no_setting() -> None:
    """Issue 42: a write whose record field has no identifier's name ("reservation": "SW-5523")
    was read out as settings ("with the reservation set to SW-5523, the return on set to
    2026-12-28"); a bare day was read as its ISO text."""
    from vocero.policy.readback import outcome, readback

    args = {"reservation": "SW-5523", "return_on": "2026-12-28", "store": "Airport"}
    today = date(2026, 12, 7)
    assert outcome("change_return", args, "committed", today=today) == (
        "Done: the return of reservation SW-5523 is changed to Monday, December 28, with the "
        "store set to Airport."
    )
    asked = readback("change_return", args, today=today)
    assert asked.text.startswith("To confirm: change the return of reservation SW-5523 to ")
    assert "SW-5523" in asked.parts and "Monday, December 28" in asked.parts
    # A code in a field no record noun names stays a setting (a membership number).
    kept = outcome("reserve_room", {"mem": "LB12XYZ", "room": "quiet"}, "committed")
    assert kept.startswith("Done: your room is reserved")


def test_a_time_alone_is_at_the_time_and_what_is_extended_goes_to_it() -> None:
    """Was "extended on at 1 PM": a time without a day took the day's "on"."""
    from vocero.policy.readback import outcome

    done = outcome("extend_checkout", {"confirmation": "LK30417", "time": "13:00"}, "committed")
    assert done == "Done: the checkout of confirmation LK30417 is extended to 1 PM."
    said = outcome("set_wakeup", {"room": "214", "time": "06:30"}, "committed")
    assert " at 6:30 AM" in said and "on at" not in said
