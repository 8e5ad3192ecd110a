"""A read-back the caller did not hear to its values is not asked: a "yes" after it binds nothing.

The voice failed part-way through the read-back (the TTS crashed after its first chunk), so the
rest of it went out as text only and the answer still *completed*; the caller heard "To confirm"
and nothing of the booking or the time. Found on a held-out profile (a "yes" executed a value the
caller never heard); the policy now reads delivery from the heard text, never from the status.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.orchestrator.test_consent_conversation import CONFIRM_EVERYTHING, booking
from tests.support.fakes import fake_runners

pytestmark = pytest.mark.anyio


async def test_a_yes_after_a_readback_whose_voice_failed_part_way_runs_nothing(
    db_path: Path,
) -> None:
    runners, _stt, _llm, tts = fake_runners(rules=CONFIRM_EVERYTHING)
    async with booking(db_path, runners) as b:
        tts.fail_after_chunks = tts.produced + 1  # the read-back's first chunk only is voiced
        b.h.session.on_text("move BK-101 to Thursday at 9")
        await b.h.until_frame("ConfirmationRequired", 1)
        await b.h.until(lambda: len(b.h.received.of("ResponseCompleted")) >= 1)
        [done] = b.h.received.of("ResponseCompleted")
        assert "BK-101" not in done.heard_text and "Thursday" not in done.heard_text

        mark = len(b.h.received.frames)
        b.h.session.on_text("yes, go ahead")
        await b.h.until(lambda: len(b.h.received.of("ResponseCompleted")) >= 2)
        assert b.sent() == [], "a yes bound values the caller never heard"
        assert await b.authorised() == []
        assert "To confirm: shift booking BK-101 to Thursday at 9" in b.spoken_since(mark)
