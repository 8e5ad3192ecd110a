"""The speech recogniser's hint: identifiers the caller heard (latest first), then the
profile's vocabulary (not its claims' topics); handed to every final transcription."""

from __future__ import annotations

import pytest

from tests.support.audio import silence_frames, tone_frames
from tests.support.fakes import fake_runners
from tests.support.harness import profile, running
from vocero.contracts.domain import Claim, ClaimSource
from vocero.contracts.ports import Message
from vocero.inference.sim.script import Rule
from vocero.orchestrator.vocabulary import (
    MAX_IDENTIFIERS,
    identifiers_heard,
    profile_terms,
    session_vocabulary,
)

SOURCE = [ClaimSource(id="kb", version="1", passage="Kennels open at eight on Sundays.")]
KENNEL = profile(
    vocabulary=["visit V-12", "Dr. Okafor", "kennel", "Kennel"],
    claims=[Claim(key="kennel.sunday", text="The kennels open at 8 AM on Sundays.",
                  sources=SOURCE, topics=["kennel", "Sundays", "boarding"])],
)


def _said(*lines: str) -> list[Message]:
    return [Message(role="assistant", content=line) for line in lines]


def test_identifiers_the_caller_heard_come_latest_first_once_each() -> None:
    history = [*_said("Visit V-12 is on Monday at 4pm."),
               Message(role="user", content="and K9-7?"),  # the caller's words: not a hint
               *_said("You have two visits: V-12 and V-30, on the 21st.")]
    assert identifiers_heard(history) == ["V-30", "V-12"]


def test_times_ordinals_and_plain_numbers_are_not_identifiers() -> None:
    assert identifiers_heard(_said("At 4pm on the 21st, 3 items, 10h, not 2026-12-04.")) == []


def test_at_most_a_few_identifiers_are_kept() -> None:
    said = _said(" ".join(f"B{n}" for n in range(20)))
    assert len(identifiers_heard(said)) == MAX_IDENTIFIERS


def test_the_profile_gives_its_vocabulary_without_repeats_and_not_its_topics() -> None:
    assert profile_terms(KENNEL) == ["visit V-12", "Dr. Okafor", "kennel"]
    assert session_vocabulary(["V-30", "V-12"], profile_terms(KENNEL))[:3] == (
        "V-30", "V-12", "visit V-12")


@pytest.mark.anyio
async def test_each_final_transcription_gets_the_sessions_vocabulary() -> None:
    runners, stt, *_ = fake_runners(stt=["my visits", "move V-30"],
                                    rules=[Rule(match=".*", reply="Anything else?")])
    async with running(runners, prof=KENNEL) as h:
        for frame in tone_frames(400) + silence_frames(900):
            h.session.on_audio(frame)
        await h.until_frame("ResponseCompleted")
        # what the caller heard of a tool's read-out (grounded speech is tested elsewhere)
        h.session.history.append(Message(role="assistant", content="Visit V-30 is on Friday."))
        for frame in tone_frames(400) + silence_frames(900):
            h.session.on_audio(frame)
        await h.until_frame("ResponseCompleted", 2)
    first, last = stt.vocabularies[0], stt.vocabularies[-1]
    assert first == ("visit V-12", "Dr. Okafor", "kennel")
    assert last == ("V-30", *first), "what the caller was just told comes first"
