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
