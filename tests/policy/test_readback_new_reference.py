"""A write's outcome says the reference its service gave it (issue 42: a blind profile's booking
was "Done: your bay is reserved ..." and the caller never heard the booking reference the
receipt held). Old code: ``outcome`` took no receipt, so nothing of it was said."""

from __future__ import annotations

from datetime import date

from vocero.policy.readback import outcome

ARGUMENTS = {"mem": "LB12XYZ", "room": "quiet", "starts": "2026-12-08T08:30:00+00:00"}


def test_a_reference_the_receipt_gave_is_said_after_the_outcome() -> None:
    receipt = {"operation_id": "op_1", "hold_ref": "RM-301", "room": "quiet study room"}
    said = outcome("reserve_room", ARGUMENTS, "committed", today=date(2026, 12, 7),
                   receipt=receipt)  # fmt: skip
    assert said.startswith("Done: your room is reserved for Tuesday, December 8 at 8:30 AM")
    assert said.endswith(" Your hold reference is RM-301.")
    assert "op_1" not in said


def test_a_reference_the_caller_said_or_no_receipt_adds_nothing() -> None:
    arguments = {"loan_ref": "LN-3310", "when": "Friday at 11"}
    plain = outcome("extend_loan", arguments, "committed")
    assert outcome("extend_loan", arguments, "committed", receipt={"loan_ref": "LN-3310"}) == plain
    assert "reference" not in outcome("reserve_room", ARGUMENTS, "rejected", "taken",
                                      receipt={"hold_ref": "RM-301"})  # fmt: skip
