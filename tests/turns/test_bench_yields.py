"""``vocero bench ttfs``' paused-caller figures (issue 45 item 5): whole request answered, agent
audio heard before a yield, unrecovered cut-offs; on frames as a session sends them."""

from __future__ import annotations

from vocero.bench.halves import PausedTurn
from vocero.bench.ttfs_yields import Heard, covers, lived, lived_report
from vocero.contracts import events as ev
from vocero.orchestrator.output import OutFrame

SENTENCE = "I need to change my booking. ... to the later slot on Thursday"
SECOND = 16_000 * 2  # bytes of one second of 16 kHz PCM16


def answer(heard: Heard, at: float, generation: str, turn: str, said: str, audio_s: float,
           status: str) -> None:
    """The session commits ``said`` as ``turn`` and answers it with ``audio_s`` of audio from
    ``at``, played as it comes, ending ``status`` (an interrupted one is flushed first)."""
    heard.take(OutFrame(payload=ev.Transcript(turn_id=turn, text=said),
                        envelope=ev.TranscriptFinalV1), at)
    heard.take(OutFrame(payload=ev.ResponseCreated(generation_id=generation, turn_id=turn)), at)
    for index in range(int(audio_s * 10)):
        heard.take(OutFrame(payload=chunk(generation, index)), at + index * 0.1)
        heard.play(100.0)
    if status == "interrupted":
        heard.take(OutFrame(payload=ev.StopAndFlush(generation_id=generation, reason="barge_in")),
                   at + audio_s)
    heard.take(OutFrame(payload=ev.ResponseCompleted(generation_id=generation, status=status,
                                                     heard_text="")), at + audio_s)


def chunk(generation: str, index: int, seconds: float = 0.1) -> ev.AudioOut:
    return ev.AudioOut(generation_id=generation, unit_id="u", chunk_index=index,
                       audio=b"\x00" * int(SECOND * seconds), sample_rate=16_000)


def caller(commit_after_last_word_ms: float) -> PausedTurn:
    return PausedTurn("p1", SENTENCE, commit_after_last_word_ms, last_word_at=10.0)


def test_covers_needs_half_the_words_of_each_part() -> None:
    assert covers("I need to change my booking to the later slot on Thursday.", SENTENCE)
    assert covers("I need to change my booking to the later slot.", SENTENCE)
    assert not covers("I need to change my booking.", SENTENCE)
    assert not covers("to the later slot on Thursday", SENTENCE)


def test_covers_reads_spelled_numbers_as_the_recogniser_writes_them() -> None:
    assert covers("The code is 47, 29.", "The code is four seven ... two nine.")
    assert not covers("1, 2, 3, 4.", "My phone number is five five five ... one two three four.")


def test_a_caller_answered_once_after_their_last_word_got_their_whole_request() -> None:
    heard = Heard()
    answer(heard, 10.4, "g1", "t1", "I need to change my booking to the later slot on Thursday.",
           2.0, "completed")
    outcome = lived("p1", SENTENCE, caller(400.0), heard)
    assert (outcome.cut_off, outcome.whole, outcome.heard_before_yield_ms) == (False, True, 0.0)


def test_a_cut_off_caller_answered_on_the_second_half_alone_is_unrecovered() -> None:
    heard = Heard()
    answer(heard, 8.0, "g1", "t1", "I need to change my booking.", 1.3, "interrupted")
    answer(heard, 10.5, "g2", "t2", "to the later slot on Thursday", 2.0, "completed")
    outcome = lived("p1", SENTENCE, caller(-2000.0), heard)
    assert outcome.cut_off and not outcome.whole
    assert round(outcome.heard_before_yield_ms) == 1300
    report = lived_report([outcome])
    assert report["unrecovered_cut_offs"] == 1 and report["whole_request_answered_rate"] == 0
    assert report["agent_audio_heard_before_yield_ms"]["p50"] == 1300


def test_a_cut_off_caller_whose_continuation_was_joined_is_recovered() -> None:
    heard = Heard()
    answer(heard, 8.0, "g1", "t1", "I need to change my booking.", 0.2, "interrupted")
    answer(heard, 10.5, "g2", "t2", "I need to change my booking to the later slot on Thursday",
           2.0, "completed")
    outcome = lived("p1", SENTENCE, caller(-2000.0), heard)
    assert outcome.cut_off and outcome.whole and round(outcome.heard_before_yield_ms) == 200
    assert lived_report([outcome])["unrecovered_cut_offs"] == 0


def test_an_answer_to_the_first_half_still_playing_after_the_last_word_is_not_whole() -> None:
    heard = Heard()
    answer(heard, 10.2, "g1", "t1", "I need to change my booking.", 2.0, "completed")
    outcome = lived("p1", SENTENCE, caller(-1500.0), heard)
    assert not outcome.whole


def test_no_answer_after_the_last_word_is_not_whole() -> None:
    outcome = lived("p1", SENTENCE, caller(300.0), Heard())
    assert not outcome.whole


def test_an_answer_to_the_half_stopped_after_the_last_word_is_heard_before_a_yield() -> None:
    """Late on a loaded machine: the answer to the first part begins after the last word, the
    caller's continuation stops it, and the joined request is answered: that is the final."""
    heard = Heard()
    answer(heard, 10.3, "g1", "t1", "I need to change my booking.", 0.6, "interrupted")
    assert heard.final(10.0) is None and not heard.settled(10.0)
    answer(heard, 11.5, "g2", "t2", "I need to change my booking to the later slot on Thursday",
           2.0, "completed")
    assert heard.settled(10.0)
    outcome = lived("p1", SENTENCE, caller(-1000.0), heard)
    assert outcome.whole and round(outcome.heard_before_yield_ms) == 600


def test_audio_sent_ahead_of_its_playout_was_not_heard() -> None:
    """The session sends an answer's audio ahead of where the client plays it: a caller has
    heard what has played, in real time, never what is still queued. 2 s of the answer came at
    once, 300 ms played, and the caller's continuation stopped it: 300 ms heard, and the
    playout reported to the session said so as it went."""
    heard = Heard()
    heard.take(OutFrame(payload=ev.ResponseCreated(generation_id="g1", turn_id="t1")), 8.0)
    heard.take(OutFrame(payload=chunk("g1", 0, seconds=2.0)), 8.0)
    reports = [heard.play(100.0) for _ in range(3)]
    assert reports == [[("g1", 100)], [("g1", 200)], [("g1", 300)]]
    heard.take(OutFrame(payload=ev.StopAndFlush(generation_id="g1", reason="barge_in")), 8.3)
    assert heard.play(100.0) == [], "a flushed answer plays no more"
    heard.take(OutFrame(payload=ev.ResponseCompleted(generation_id="g1", status="interrupted",
                                                     heard_text="")), 8.3)
    answer(heard, 10.5, "g2", "t2", "I need to change my booking to the later slot on Thursday",
           2.0, "completed")
    outcome = lived("p1", SENTENCE, caller(-2000.0), heard)
    assert outcome.whole and outcome.heard_before_yield_ms == 300.0


def test_an_answer_plays_no_faster_than_its_audio_arrives() -> None:
    heard = Heard()
    heard.take(OutFrame(payload=ev.ResponseCreated(generation_id="g1", turn_id="t1")), 8.0)
    heard.take(OutFrame(payload=chunk("g1", 0)), 8.0)
    assert heard.play(500.0) == [("g1", 100)], "only 100 ms had come"
    heard.take(OutFrame(payload=chunk("g1", 1)), 8.5)
    assert heard.play(20.0) == [("g1", 120)]


def test_an_answer_to_the_half_that_played_out_is_heard_before_the_final_answer() -> None:
    """The caller went on quietly, the answer to the half was never stopped and played out
    (1.3 s), then the whole was answered: nothing was heard "before a yield" (nothing yielded),
    but 1.3 s was heard before the final answer."""
    heard = Heard()
    answer(heard, 8.0, "g1", "t1", "I need to change my booking.", 1.3, "completed")
    answer(heard, 10.5, "g2", "t2", "I need to change my booking to the later slot on Thursday",
           2.0, "completed")
    outcome = lived("p1", SENTENCE, caller(-2000.0), heard)
    assert outcome.cut_off and outcome.whole
    assert outcome.heard_before_yield_ms == 0.0
    assert round(outcome.heard_before_final_ms) == 1300
    report = lived_report([outcome])
    assert report["agent_audio_heard_before_the_final_answer_ms"]["p50"] == 1300
