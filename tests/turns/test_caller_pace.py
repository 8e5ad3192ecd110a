"""Per-caller timing (ADR-0038): a caller's within-turn pauses move the silence floor, bounded.

The turn policy is sans-IO on its own ms clock: these drive it frame by frame (20 ms), a
scripted judge answering each question at once.
"""

from __future__ import annotations

import msgspec

from vocero.contracts.domain import TurnTaking
from vocero.contracts.ports import TurnVerdict
from vocero.orchestrator.caller_pace import CallerPace, PaceSettings
from vocero.orchestrator.turn_policy import AskJudge, Commit, TurnPolicy

SETTINGS = TurnTaking(judge_pause_ms=300, complete_probability=0.5, max_silence_ms=1600)
GOING_ON = TurnVerdict(probability=0.05, heard_words=True)
FINISHED = TurnVerdict(probability=0.95, heard_words=True)
WORDS_END = TurnVerdict(probability=0.6, heard_words=True, words_probability=0.5, words_count=6)
BOUNDS = PaceSettings(floor_min_ms=250, floor_max_ms=900, after_pauses=2)


def _turn(policy: TurnPolicy, pauses: list[int], last: TurnVerdict) -> Commit:
    """400 ms of speech, then each pause of ``pauses`` (the judge: going on) and 400 ms more
    speech, then silence judged ``last``. The commit, whenever it comes."""
    policy.begin(0)
    script: list[tuple[int, bool]] = [(400, True)]
    for pause in pauses:
        script += [(pause, False), (400, True)]
    script.append((2000, False))
    now, final = 0, False
    for index, (length, voiced) in enumerate(script):
        final = index == len(script) - 1
        for _ in range(length // 20):
            now += 20
            decision = policy.frame(now, voiced)
            while isinstance(decision, AskJudge):
                decision = policy.verdict(decision.ticket, last if final else GOING_ON, now)
            if isinstance(decision, Commit):
                return decision
    raise AssertionError("the policy never ended the turn")


def test_no_floor_until_enough_pauses_and_none_from_word_gaps() -> None:
    pace = CallerPace(BOUNDS)
    pace.went_on(120)  # a gap between words
    pace.went_on(700)
    assert pace.pauses == 1 and pace.floor_ms is None
    pace.went_on(700)
    assert pace.floor_ms == 840  # 700 ms and a fifth


def test_a_slow_caller_gets_a_longer_floor_bounded_by_the_maximum() -> None:
    pace = CallerPace(BOUNDS)
    for _ in range(6):
        pace.went_on(1400)
    assert pace.floor_ms == 900


def test_a_fast_caller_gets_a_shorter_floor_bounded_by_the_minimum() -> None:
    pace = CallerPace(BOUNDS)
    for _ in range(3):
        pace.went_on(240)
    assert pace.floor_ms == 288
    for _ in range(6):
        pace.went_on(200)
    assert pace.floor_ms == 250


def test_the_average_follows_the_callers_latest_pauses() -> None:
    pace = CallerPace(BOUNDS)
    for _ in range(4):
        pace.went_on(300)
    short = pace.floor_ms
    for _ in range(4):
        pace.went_on(700)
    assert short is not None and pace.floor_ms is not None and pace.floor_ms > short + 300


def test_off_learns_nothing() -> None:
    pace = CallerPace(PaceSettings(enabled=False))
    for _ in range(5):
        pace.went_on(800)
    assert pace.floor_ms is None and pace.pauses == 0


def test_a_caller_with_long_pauses_is_not_answered_before_their_floor() -> None:
    """Without a pace the judge's "finished" ends the turn at 300 ms of silence; after two
    700 ms pauses that went on, this caller's turn ends no sooner than 840 ms."""
    plain = _turn(TurnPolicy(SETTINGS), [700, 700], FINISHED)
    assert plain.endpointing_ms == 300
    pace = CallerPace(BOUNDS)
    paced = _turn(TurnPolicy(SETTINGS, pace=pace), [700, 700], FINISHED)
    assert pace.pauses == 2
    assert paced.reason == "judged" and paced.probability == 0.95
    assert paced.endpointing_ms == 840


def test_one_pause_moves_nothing() -> None:
    pace = CallerPace(BOUNDS)
    assert _turn(TurnPolicy(SETTINGS, pace=pace), [700], FINISHED).endpointing_ms == 300


def test_a_slow_callers_floor_is_capped_at_the_maximum() -> None:
    pace = CallerPace(BOUNDS)
    commit = _turn(TurnPolicy(SETTINGS, pace=pace), [1200, 1200, 1200], FINISHED)
    assert commit.endpointing_ms == 900


def test_a_fast_caller_is_answered_before_the_words_end_silence() -> None:
    """The words model's end waits ``words_end_silence_ms`` (400) for anyone; for a caller
    whose pauses are 220 ms it waits their floor (264 ms), and never under the minimum. The
    judge is asked at 150 ms, as it is once the early transcript is ready."""
    quick = msgspec.structs.replace(SETTINGS, judge_pause_ms=150)
    plain = _turn(TurnPolicy(quick), [220, 220], WORDS_END)
    assert plain.reason == "words" and plain.endpointing_ms == 400
    pace = CallerPace(BOUNDS)
    fast = _turn(TurnPolicy(quick, pace=pace), [220, 220], WORDS_END)
    assert pace.floor_ms == 264 and fast.reason == "words" and fast.endpointing_ms == 280
    faster = CallerPace(BOUNDS)
    capped = _turn(TurnPolicy(quick, pace=faster), [200] * 6, WORDS_END)
    assert faster.floor_ms == 250 and capped.endpointing_ms == 260


def test_the_floor_carries_over_to_the_callers_next_utterance() -> None:
    pace = CallerPace(BOUNDS)
    _turn(TurnPolicy(SETTINGS, pace=pace), [700, 700], FINISHED)
    assert _turn(TurnPolicy(SETTINGS, pace=pace), [], FINISHED).endpointing_ms == 840
    assert _turn(TurnPolicy(SETTINGS, pace=CallerPace(BOUNDS)), [], FINISHED).endpointing_ms == 300


# -------------------------------------------------- a pause taken back (ADR-0037's merge)


def _cut_at_every_pause(policy: TurnPolicy, pauses: list[int]) -> Commit:
    """As :func:`_turn`, but the judge says "finished" at every pause, as it did when the
    caller was cut off: only their floor keeps a pause from ending the turn."""
    policy.begin(0)
    now = 0
    for pause in [*pauses, 2000]:
        for _ in range(400 // 20):
            now += 20
            policy.frame(now, True)
        for _ in range(pause // 20):
            now += 20
            decision = policy.frame(now, False)
            while isinstance(decision, AskJudge):
                decision = policy.verdict(decision.ticket, FINISHED, now)
            if isinstance(decision, Commit):
                return decision
    raise AssertionError("the policy never ended the turn")


def test_a_pause_taken_back_moves_the_floor_at_once() -> None:
    """One pause the caller went on after says little; one that was taken for the end of their
    turn and cost them a cut-off is the evidence: the floor covers it from now on."""
    pace = CallerPace(BOUNDS)
    pace.cut_off(700)
    assert pace.average_ms == 700 and pace.floor_ms == 840


def test_a_pause_taken_back_raises_the_average_to_at_least_itself() -> None:
    """After short pauses the moving average alone (300 + 0.35 x 400 = 440 ms, a floor of
    528 ms) would cut the same caller off at the same pause again."""
    pace = CallerPace(BOUNDS)
    for _ in range(3):
        pace.went_on(300)
    assert pace.floor_ms == 360
    pace.cut_off(700)
    assert pace.average_ms == 700 and pace.floor_ms == 840
    for _ in range(3):
        pace.went_on(300)  # their later pauses still pull it back down
    assert pace.floor_ms is not None and pace.floor_ms < 700


def test_a_word_gap_or_a_pace_turned_off_learns_nothing_from_a_merge() -> None:
    short = CallerPace(BOUNDS)
    short.cut_off(120)
    assert short.floor_ms is None and short.pauses == 0
    off = CallerPace(PaceSettings(enabled=False))
    off.cut_off(700)
    assert off.floor_ms is None and off.pauses == 0


def test_after_a_pause_taken_back_the_same_pause_no_longer_ends_the_turn() -> None:
    """The judge that ended the turn at 300 ms of a 700 ms pause says the same the next time;
    with the pause learnt, the caller's next 700 ms pause is theirs and the turn ends at their
    floor after their last word."""
    cut = _cut_at_every_pause(TurnPolicy(SETTINGS, pace=CallerPace(BOUNDS)), [700])
    assert cut.endpointing_ms == 300 and cut.speech_end_ms == 400, "cut off at the pause"
    pace = CallerPace(BOUNDS)
    pace.cut_off(700)
    whole = _cut_at_every_pause(TurnPolicy(SETTINGS, pace=pace), [700])
    assert whole.speech_end_ms == 400 + 700 + 400, "the pause did not end it"
    assert whole.reason == "judged" and whole.endpointing_ms == 840
