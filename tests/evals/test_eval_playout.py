"""The eval caller's loudspeaker and the record-side stop check, without a server: a speaker
plays in real time (it stalls when nothing more came, a flush silences it), and a unit of a
stopped generation admitted after the stop reached the caller fails ``stopped``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from vocero.evals.client import Speaker, TurnResult
from vocero.evals.expect import admitted_after_stop, check_stopped


def test_the_speaker_plays_at_the_speed_of_speech_not_of_arrival() -> None:
    speaker = Speaker()
    speaker.receive(1000, now=10.0)  # a second of audio arrives at once
    speaker.advance(10.25)
    assert speaker.played_ms == pytest.approx(250) and speaker.playing
    speaker.advance(11.5)
    assert speaker.played_ms == 1000 and not speaker.playing  # ran dry: it waits


def test_a_dry_speaker_stalls_and_starts_again_from_where_it_stopped() -> None:
    speaker = Speaker()
    speaker.receive(200, now=0.0)
    speaker.receive(200, now=1.0)  # 800 ms of silence in between: nothing was there to play
    assert speaker.played_ms == 200
    speaker.advance(1.1)
    assert speaker.played_ms == pytest.approx(300)


def test_a_flush_silences_the_speaker_and_what_comes_after_is_never_played() -> None:
    speaker = Speaker()
    speaker.receive(1000, now=0.0)
    speaker.flush(0.4)
    speaker.receive(500, now=0.5)
    speaker.advance(5.0)
    assert (speaker.played_ms, speaker.received_ms, speaker.playing) == (400, 1000, False)


def _stopped_turn(admitted: datetime) -> TurnResult:
    stop = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC).timestamp()
    turn = TurnResult(index=1, barged_at=stop - 0.05, stops=[{"generation_id": "gen_1"}],
                      stopped_at={"gen_1": stop})
    turn.units = [
        {"unit_id": "u1", "generation_id": "gen_1", "text": "First part.",
         "disposition": "admitted", "admitted_at": "2026-12-02T11:59:59.500000Z"},
        {"unit_id": "u2", "generation_id": "gen_1", "text": "Second part.",
         "disposition": "admitted", "admitted_at": admitted.isoformat()},
        {"unit_id": "u3", "generation_id": "gen_1", "text": "Third part.",
         "disposition": "canceled", "admitted_at": None},
    ]
    return turn


def test_a_unit_admitted_after_the_stop_fails_stopped_by_the_record() -> None:
    turn = _stopped_turn(datetime(2026, 12, 2, 12, 0, 0, 300_000, tzinfo=UTC))
    assert [u["unit_id"] for u in admitted_after_stop(turn)] == ["u2"]
    failures = check_stopped(True, turn)
    assert len(failures) == 1
    assert failures[0].expected == "no unit of the stopped generation admitted after the stop"
    assert "'Second part.' admitted 2026-12-02T12:00:00.300000+00:00" in failures[0].happened


def test_units_admitted_before_the_stop_pass() -> None:
    turn = _stopped_turn(datetime(2026, 12, 2, 11, 59, 59, 900_000, tzinfo=UTC))
    assert admitted_after_stop(turn) == [] and check_stopped(True, turn) == []


def test_a_naive_timestamp_is_read_as_utc() -> None:
    turn = _stopped_turn(datetime(2026, 12, 2, 12, 0, 1))  # no zone: UTC, so after the stop
    assert [u["unit_id"] for u in admitted_after_stop(turn)] == ["u2"]
