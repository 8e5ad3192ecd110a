"""The turn policy: when a pause is asked about, what commits, and what never does."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace as msgspec_replace

from vocero.contracts.domain import AgentProfile, TurnTaking
from vocero.contracts.ports import TurnVerdict
from vocero.orchestrator.turn_policy import (
    TRANSITIONS,
    AskJudge,
    Commit,
    Decision,
    TurnPolicy,
    TurnPolicyError,
)

SETTINGS = TurnTaking(
    judge_pause_ms=150,
    judge_window_ms=200,
    rejudge_ms=200,
    complete_probability=0.5,
    audio_probability=0.9,
    max_silence_ms=1600,
    fallback_silence_ms=480,
)
AUDIO = TurnVerdict(probability=0.95)
UNSURE = TurnVerdict(probability=0.6)
WORDS_OK = TurnVerdict(probability=0.6, heard_words=True)
GOING_ON = TurnVerdict(probability=0.05, heard_words=True)


def _speak_then_listen(policy: TurnPolicy, speech_ms: int, until_ms: int) -> list[Decision]:
    """Speech from 0 to ``speech_ms`` in 20 ms frames, then silence until ``until_ms``."""
    policy.begin(0)
    decisions = []
    for now in range(20, until_ms + 1, 20):
        decision = policy.frame(now, voiced=now <= speech_ms)
        if decision is not None:
            decisions.append(decision)
            if isinstance(decision, Commit):
                break
    return decisions


def _ask(decisions: list[Decision]) -> AskJudge:
    (ask,) = [d for d in decisions if isinstance(d, AskJudge)]
    return ask


# ------------------------------------------------------------------------------------ unit


def test_a_pause_of_judge_pause_ms_asks_the_judge_once() -> None:
    policy = TurnPolicy(SETTINGS)
    decisions = _speak_then_listen(policy, speech_ms=1000, until_ms=1300)
    ask = _ask(decisions)
    assert (ask.at_ms, ask.silence_ms, ask.audio_end_ms) == (1160, 160, 1160)
    assert policy.state == "judging"


def test_a_confident_audio_verdict_commits_at_once() -> None:
    policy = TurnPolicy(SETTINGS)
    ask = _ask(_speak_then_listen(policy, speech_ms=1000, until_ms=1200))
    commit = policy.verdict(ask.ticket, AUDIO, now_ms=1190)
    assert commit == Commit(reason="judged", at_ms=1190, speech_end_ms=1000, probability=0.95)
    assert commit.endpointing_ms == 190
    assert policy.state == "committed"


def test_an_unsure_audio_verdict_waits_but_the_same_probability_with_words_commits() -> None:
    policy = TurnPolicy(SETTINGS)
    ask = _ask(_speak_then_listen(policy, speech_ms=1000, until_ms=1160))
    assert policy.verdict(ask.ticket, UNSURE, now_ms=1180) is None
    assert policy.state == "paused"
    again = policy.words(now_ms=1400)
    assert isinstance(again, AskJudge)
    assert again.audio_end_ms == 1200  # the judge hears 200 ms of the silence, no more
    commit = policy.verdict(again.ticket, WORDS_OK, now_ms=1430)
    assert isinstance(commit, Commit) and commit.reason == "judged"


def test_it_asks_again_about_new_audio_then_only_about_new_words() -> None:
    policy = TurnPolicy(SETTINGS)
    policy.begin(0)
    asks: list[AskJudge] = []
    for now in range(20, 2500, 20):
        decision = policy.frame(now, voiced=now <= 1000)
        if isinstance(decision, AskJudge):
            asks.append(decision)
            assert policy.verdict(decision.ticket, UNSURE, now_ms=now + 10) is None
    assert [a.audio_end_ms for a in asks] == [1160, 1200]
    assert [a.at_ms for a in asks] == [1160, 1380]  # 200 ms after the first verdict
    words = policy.words(now_ms=2500)
    assert isinstance(words, AskJudge) and words.audio_end_ms == 1200


def test_words_that_arrive_while_judging_are_judged_right_after() -> None:
    policy = TurnPolicy(SETTINGS)
    ask = _ask(_speak_then_listen(policy, speech_ms=1000, until_ms=1160))
    assert policy.words(now_ms=1170) is None
    follow = policy.verdict(ask.ticket, UNSURE, now_ms=1190)
    assert isinstance(follow, AskJudge) and follow.ticket == ask.ticket + 1


def test_words_that_say_it_goes_on_keep_listening_until_max_silence() -> None:
    policy = TurnPolicy(SETTINGS)
    ask = _ask(_speak_then_listen(policy, speech_ms=1000, until_ms=1160))
    assert policy.verdict(ask.ticket, GOING_ON, now_ms=1200) is None
    decisions = [policy.frame(now, voiced=False) for now in range(1220, 2700, 20)]
    commits = [d for d in decisions if isinstance(d, Commit)]
    assert commits[0] == Commit(reason="max_silence", at_ms=2600, speech_end_ms=1000)


def test_a_verdict_about_a_pause_that_ended_is_ignored() -> None:
    policy = TurnPolicy(SETTINGS)
    ask = _ask(_speak_then_listen(policy, speech_ms=1000, until_ms=1160))
    assert policy.frame(1180, voiced=True) is None  # the caller went on
    assert policy.verdict(ask.ticket, AUDIO, now_ms=1190) is None
    assert policy.state == "speaking"
    later = [policy.frame(now, voiced=False) for now in range(1200, 1400, 20)]
    (next_ask,) = [d for d in later if isinstance(d, AskJudge)]
    assert next_ask.ticket == ask.ticket + 1 and next_ask.silence_ms == 160
    assert policy.verdict(ask.ticket, AUDIO, now_ms=1350) is None, "the old pause's verdict"
    assert policy.state == "judging" and policy.pending == next_ask.ticket


def test_max_silence_commits_even_when_the_judge_never_answers() -> None:
    policy = TurnPolicy(SETTINGS)
    decisions = _speak_then_listen(policy, speech_ms=1000, until_ms=3000)
    assert isinstance(decisions[0], AskJudge)
    assert decisions[-1] == Commit(reason="max_silence", at_ms=2600, speech_end_ms=1000)


def test_a_failed_judgement_falls_back_to_the_fixed_hangover() -> None:
    policy = TurnPolicy(SETTINGS)
    ask = _ask(_speak_then_listen(policy, speech_ms=1000, until_ms=1160))
    assert policy.failed(ask.ticket, now_ms=1200) is None
    decisions = [policy.frame(now, voiced=False) for now in range(1180, 1600, 20)]
    assert not any(isinstance(d, AskJudge) for d in decisions)
    commits = [d for d in decisions if isinstance(d, Commit)]
    assert commits[0] == Commit(reason="fallback", at_ms=1480, speech_end_ms=1000)


def test_a_failure_reported_after_the_hangover_commits_at_once() -> None:
    policy = TurnPolicy(SETTINGS)
    ask = _ask(_speak_then_listen(policy, speech_ms=1000, until_ms=1160))
    commit = policy.failed(ask.ticket, now_ms=1500)
    assert commit == Commit(reason="fallback", at_ms=1500, speech_end_ms=1000)


def test_without_a_judge_the_turn_ends_after_the_fixed_silence() -> None:
    policy = TurnPolicy(SETTINGS, judge=False)
    decisions = _speak_then_listen(policy, speech_ms=1000, until_ms=2000)
    assert decisions == [Commit(reason="fallback", at_ms=1480, speech_end_ms=1000)]


def test_frames_outside_an_utterance_are_ignored_and_begin_starts_over() -> None:
    policy = TurnPolicy(SETTINGS)
    assert policy.frame(20, voiced=False) is None
    assert policy.words(40) is None
    assert policy.state == "idle"
    commit = _speak_then_listen(policy, speech_ms=100, until_ms=2000)[-1]
    assert isinstance(commit, Commit)
    assert policy.frame(2020, voiced=True) is None
    assert policy.state == "committed"
    policy.begin(3000)
    assert policy.state == "speaking" and policy.last_voiced_ms == 3000


def test_every_move_of_the_table_is_between_known_states() -> None:
    states = {"idle", "speaking", "paused", "judging", "committed"}
    assert {s for s, _ in TRANSITIONS} <= states and set(TRANSITIONS.values()) <= states
    assert {e for s, e in TRANSITIONS if s == "committed"} == {"begin"}
    assert {e for s, e in TRANSITIONS if s == "idle"} == {"begin"}
    error = TurnPolicyError("committed", "speech")
    assert (error.state, error.event) == ("committed", "speech")


def test_the_profile_carries_the_thresholds_with_their_defaults() -> None:
    import msgspec

    raw = {"id": "p", "version": "1", "match": {"tenant": "t"}}
    assert msgspec.convert(raw, AgentProfile).turn_taking == TurnTaking()
    tuned = msgspec.convert({**raw, "turn_taking": {"max_silence_ms": 1200}}, AgentProfile)
    assert tuned.turn_taking.max_silence_ms == 1200
    with pytest.raises(msgspec.ValidationError, match="hangover"):
        msgspec.convert({**raw, "turn_taking": {"hangover": 1}}, AgentProfile)


# ------------------------------------------------------------------------------ properties


@dataclass
class Step:
    kind: str  # frame | verdict | fail | words | transcribing | no_words
    gap_ms: int = 20
    voiced: bool = False
    probability: float = 0.0
    heard_words: bool = False
    stale: bool = False


frames = st.builds(
    Step, kind=st.just("frame"), gap_ms=st.sampled_from([10, 20, 32]), voiced=st.booleans()
)
runs = st.builds(  # speech or silence for a while: pauses long enough to be judged
    lambda count, voiced: [Step(kind="frame", voiced=voiced)] * count,
    st.integers(1, 40),
    st.booleans(),
)
steps = st.one_of(
    frames,
    st.builds(
        Step,
        kind=st.just("verdict"),
        probability=st.floats(0.0, 1.0),
        heard_words=st.booleans(),
        stale=st.booleans(),
    ),
    st.builds(Step, kind=st.sampled_from(["fail", "words", "transcribing", "no_words"])),
)
traces = st.lists(st.one_of(steps.map(lambda step: [step]), runs), max_size=60).map(
    lambda chunks: [step for chunk in chunks for step in chunk]
)


@dataclass
class Run:
    """A trace driven through a policy, with what the driver saw."""

    decisions: list[tuple[str, Decision]] = field(default_factory=list)
    voiced_frame_commits: int = 0
    stale_commits: int = 0
    missed_max_silence: int = 0
    short_commits: int = 0


def drive(trace: list[Step], s: TurnTaking = SETTINGS) -> Run:
    policy, run = TurnPolicy(s), Run()
    now, last_voiced = 0.0, 0.0
    asked: list[tuple[int, float]] = []  # (ticket, last voiced when asked)
    policy.begin(now)
    for step in trace:
        if policy.state == "committed":
            break
        decision: Decision | None
        if step.kind == "frame":
            now += step.gap_ms
            silence_before = now - last_voiced
            decision = policy.frame(now, step.voiced)
            if step.voiced:
                last_voiced = now
                run.voiced_frame_commits += isinstance(decision, Commit)
            elif silence_before >= s.max_silence_ms and not isinstance(decision, Commit):
                run.missed_max_silence += 1
        elif step.kind == "verdict" and asked:
            ticket, voiced_at = asked[0] if step.stale else asked[-1]
            verdict = TurnVerdict(probability=step.probability, heard_words=step.heard_words)
            decision = policy.verdict(ticket, verdict, now)
            if isinstance(decision, Commit) and voiced_at != last_voiced:
                run.stale_commits += 1
        elif step.kind == "fail" and asked:
            decision = policy.failed(asked[-1][0], now)
        elif step.kind == "words":
            decision = policy.words(now)
        elif step.kind == "transcribing":
            policy.transcribing()
            continue
        elif step.kind == "no_words":
            policy.no_words()
            continue
        else:
            continue
        if isinstance(decision, AskJudge):
            asked.append((decision.ticket, last_voiced))
        if isinstance(decision, Commit):
            assert decision.speech_end_ms == last_voiced
            least = min(s.judge_pause_ms, s.words_pause_ms)
            run.short_commits += decision.at_ms - last_voiced < least
        if decision is not None:
            run.decisions.append((step.kind, decision))
    return run


@settings(max_examples=300, deadline=None)
@given(traces)
def test_it_never_commits_while_the_caller_speaks(trace: list[Step]) -> None:
    run = drive(trace)
    assert run.voiced_frame_commits == 0
    assert run.short_commits == 0, "every commit needs judge_pause_ms or words_pause_ms of silence"


@settings(max_examples=300, deadline=None)
@given(traces)
def test_a_verdict_about_an_earlier_pause_never_commits(trace: list[Step]) -> None:
    assert drive(trace).stale_commits == 0


@settings(max_examples=300, deadline=None)
@given(traces, st.integers(0, 120))
def test_it_always_commits_by_max_silence(trace: list[Step], silent_frames: int) -> None:
    tail = [Step(kind="frame", gap_ms=20)] * silent_frames
    run = drive(trace + tail)
    assert run.missed_max_silence == 0
    if silent_frames * 20 >= SETTINGS.max_silence_ms + 20:
        assert any(isinstance(d, Commit) for _, d in run.decisions)


@settings(max_examples=200, deadline=None)
@given(traces)
def test_the_same_trace_gives_the_same_decisions(trace: list[Step]) -> None:
    assert drive(trace).decisions == drive(trace).decisions


# ------------------------------------------------------------------- what the words finish

FINISHED_LOW = TurnVerdict(
    probability=0.2, heard_words=True, words_finished=True, words_question=True
)
FINISHED = TurnTaking(
    judge_pause_ms=150,
    complete_probability=0.9,
    finished_probability=0.15,
    finished_statement_probability=0.7,
)


def test_words_that_read_as_finished_commit_at_the_lower_finished_probability() -> None:
    policy = TurnPolicy(FINISHED)
    ask = _ask(_speak_then_listen(policy, speech_ms=1000, until_ms=1160))
    assert policy.verdict(ask.ticket, UNSURE, now_ms=1180) is None
    again = policy.words(now_ms=1400)
    assert isinstance(again, AskJudge)
    commit = policy.verdict(again.ticket, FINISHED_LOW, now_ms=1420)
    assert commit == Commit(reason="judged", at_ms=1420, speech_end_ms=1000, probability=0.2)


@pytest.mark.parametrize(
    "verdict",
    [
        TurnVerdict(probability=0.2, heard_words=True),  # words, but not a finished clause
        # the audio says it goes on
        TurnVerdict(probability=0.1, heard_words=True, words_finished=True, words_question=True),
        # a finished statement ("I want to change them.") needs more than a question
        TurnVerdict(probability=0.6, heard_words=True, words_finished=True),
    ],
)
def test_other_words_or_a_doubtful_audio_keep_listening(verdict: TurnVerdict) -> None:
    policy = TurnPolicy(FINISHED)
    ask = _ask(_speak_then_listen(policy, speech_ms=1000, until_ms=1160))
    assert policy.verdict(ask.ticket, verdict, now_ms=1180) is None
    assert policy.state == "paused"


def test_a_finished_statement_commits_at_the_statement_probability() -> None:
    policy = TurnPolicy(FINISHED)
    ask = _ask(_speak_then_listen(policy, speech_ms=1000, until_ms=1160))
    statement = TurnVerdict(probability=0.75, heard_words=True, words_finished=True)
    assert isinstance(policy.verdict(ask.ticket, statement, now_ms=1180), Commit)


# ------------------------------------------------------------- words before judge_pause_ms


def test_words_ready_before_the_pause_is_judged_are_judged_at_once() -> None:
    policy = TurnPolicy(msgspec_replace(SETTINGS, judge_pause_ms=300))
    assert _speak_then_listen(policy, speech_ms=1000, until_ms=1240) == []
    assert policy.state == "speaking"  # 240 ms of silence: not judged on its audio yet
    ask = policy.words(now_ms=1240)
    assert isinstance(ask, AskJudge)
    assert (ask.silence_ms, ask.audio_end_ms) == (240, 1200)  # at most judge_window_ms heard
    assert policy.state == "judging"
    commit = policy.verdict(ask.ticket, WORDS_OK, now_ms=1270)
    assert commit == Commit(reason="judged", at_ms=1270, speech_end_ms=1000, probability=0.6)


def test_only_the_words_are_judged_when_they_come_first() -> None:
    policy = TurnPolicy(msgspec_replace(SETTINGS, judge_pause_ms=300))
    _speak_then_listen(policy, speech_ms=1000, until_ms=1240)
    ask = policy.words(now_ms=1240)
    assert isinstance(ask, AskJudge)
    assert policy.verdict(ask.ticket, UNSURE, now_ms=1270) is None
    later = [policy.frame(now, voiced=False) for now in range(1260, 1600, 20)]
    assert not any(isinstance(d, AskJudge) for d in later), "its audio window was heard"


def test_words_ready_too_early_wait_for_words_pause_ms() -> None:
    policy = TurnPolicy(msgspec_replace(SETTINGS, judge_pause_ms=300, words_pause_ms=150))
    _speak_then_listen(policy, speech_ms=1000, until_ms=1060)
    assert policy.words(now_ms=1060) is None  # 60 ms of silence: too soon to judge
    decisions = [(now, policy.frame(now, voiced=False)) for now in range(1080, 1200, 20)]
    asks = [(now, d) for now, d in decisions if isinstance(d, AskJudge)]
    assert [now for now, _ in asks] == [1160], "judged once 150 ms of silence had passed"


def test_words_of_a_pause_that_ended_or_under_the_fixed_silence_are_not_judged() -> None:
    policy = TurnPolicy(msgspec_replace(SETTINGS, judge_pause_ms=300))
    policy.begin(0)
    policy.frame(20, voiced=True)
    assert policy.words(now_ms=20) is None, "the last frame was speech: no pause to judge"
    assert policy.state == "speaking"
    ask = _ask([d for now in range(40, 360, 20) if (d := policy.frame(now, voiced=False))])
    assert policy.failed(ask.ticket, now_ms=340) is None  # busy: the fixed silence decides
    assert policy.words(now_ms=360) is None
    assert policy.state == "paused"


def test_a_short_utterance_is_never_ended_by_the_audio_alone_but_its_words_may() -> None:
    settings = msgspec_replace(SETTINGS, audio_min_speech_ms=600)
    policy = TurnPolicy(settings)
    ask = _ask(_speak_then_listen(policy, speech_ms=300, until_ms=460))  # "Hello," then quiet
    assert policy.verdict(ask.ticket, TurnVerdict(probability=0.99), now_ms=480) is None
    assert policy.state == "paused"
    again = policy.words(now_ms=700)
    assert isinstance(again, AskJudge)
    commit = policy.verdict(again.ticket, WORDS_OK, now_ms=720)
    assert isinstance(commit, Commit) and commit.speech_end_ms == 300


def test_an_utterance_long_enough_is_ended_by_the_audio_alone() -> None:
    policy = TurnPolicy(msgspec_replace(SETTINGS, audio_min_speech_ms=600))
    ask = _ask(_speak_then_listen(policy, speech_ms=620, until_ms=780))
    assert isinstance(policy.verdict(ask.ticket, AUDIO, now_ms=800), Commit)


# ------------------------------------------------------------- words on their way


def _listen(policy: TurnPolicy, start_ms: int, until_ms: int) -> list[tuple[int, Decision]]:
    """Silent frames from ``start_ms`` to ``until_ms``: the decisions, with their times."""
    out = []
    for now in range(start_ms, until_ms + 1, 20):
        decision = policy.frame(now, voiced=False)
        if decision is not None:
            out.append((now, decision))
    return out


WAITING = msgspec_replace(SETTINGS, judge_pause_ms=300, words_wait_ms=400)


def test_while_the_words_are_transcribed_the_audio_alone_waits_up_to_words_wait_ms() -> None:
    policy = TurnPolicy(WAITING)
    _speak_then_listen(policy, speech_ms=1000, until_ms=1160)
    policy.transcribing()
    asks = _listen(policy, 1180, 1500)
    assert [now for now, d in asks if isinstance(d, AskJudge)] == [1400], "not at 1300"


def test_words_on_their_way_are_judged_when_they_come_and_the_audio_is_not() -> None:
    policy = TurnPolicy(WAITING)
    _speak_then_listen(policy, speech_ms=1000, until_ms=1160)
    policy.transcribing()
    assert _listen(policy, 1180, 1340) == []
    ask = policy.words(now_ms=1350)
    assert isinstance(ask, AskJudge) and ask.silence_ms == 350
    assert policy.verdict(ask.ticket, UNSURE, now_ms=1380) is None  # with words: not enough
    later = _listen(policy, 1400, 1560)
    assert later == [], "the audio window was heard with the words"


def test_an_empty_transcript_lets_the_audio_be_judged_from_judge_pause_ms() -> None:
    policy = TurnPolicy(WAITING)
    _speak_then_listen(policy, speech_ms=1000, until_ms=1160)
    policy.transcribing()
    assert _listen(policy, 1180, 1260) == []
    policy.no_words()
    asks = _listen(policy, 1280, 1320)
    assert [now for now, d in asks if isinstance(d, AskJudge)] == [1300]


def test_speech_after_the_transcription_began_forgets_it() -> None:
    policy = TurnPolicy(WAITING)
    _speak_then_listen(policy, speech_ms=1000, until_ms=1160)
    policy.transcribing()
    policy.frame(1180, voiced=True)  # the caller goes on: that transcript is stale
    asks = _listen(policy, 1200, 1500)
    assert [now for now, d in asks if isinstance(d, AskJudge)] == [1480]  # 300 ms after 1180


def test_transcribing_outside_an_utterance_changes_nothing() -> None:
    policy = TurnPolicy(WAITING)
    policy.transcribing()
    assert policy.state == "idle"
    asks = _speak_then_listen(policy, speech_ms=1000, until_ms=1300)
    assert [d.at_ms for d in asks if isinstance(d, AskJudge)] == [1300]


# ------------------------------------------- issue #29: the words carry more of the decision


def _pause_and_resume(policy: TurnPolicy, verdict: TurnVerdict) -> None:
    """Speech 0-1000 ms, a pause the judge is asked about (``verdict``), speech again from
    1500 to 2500 ms."""
    ask = _ask(_speak_then_listen(policy, speech_ms=1000, until_ms=1160))
    assert policy.verdict(ask.ticket, verdict, now_ms=1180) is None
    for now in range(1180, 1500, 20):
        assert not isinstance(policy.frame(now, voiced=False), Commit)
    for now in range(1500, 2501, 20):
        assert policy.frame(now, voiced=True) is None


def _next_ask(policy: TurnPolicy, start_ms: int, until_ms: int) -> AskJudge:
    for now in range(start_ms, until_ms + 1, 20):
        decision = policy.frame(now, voiced=False)
        if isinstance(decision, AskJudge):
            return decision
    raise AssertionError("no judgement asked")


def test_words_that_go_on_never_commit_whatever_the_audio_says() -> None:
    policy = TurnPolicy(FINISHED)
    ask = _ask(_speak_then_listen(policy, speech_ms=1000, until_ms=1160))
    sure_audio = TurnVerdict(probability=1.0, heard_words=True, words_going_on=True)
    assert policy.verdict(ask.ticket, sure_audio, now_ms=1180) is None
    decisions = [policy.frame(now, voiced=False) for now in range(1200, 2601, 20)]
    commits = [d for d in decisions if isinstance(d, Commit)]
    assert commits == [Commit(reason="max_silence", at_ms=2600, speech_end_ms=1000)]


def test_a_finished_transcript_the_recogniser_was_sure_of_commits_though_the_audio_doubts() -> None:
    policy = TurnPolicy(msgspec_replace(FINISHED, sure_probability=0.1))
    ask = _ask(_speak_then_listen(policy, speech_ms=1000, until_ms=1160))
    sure = TurnVerdict(probability=0.12, heard_words=True, words_finished=True, words_sure=True)
    commit = policy.verdict(ask.ticket, sure, now_ms=1180)
    assert commit == Commit(reason="judged", at_ms=1180, speech_end_ms=1000, probability=0.12)
    policy = TurnPolicy(msgspec_replace(FINISHED, sure_probability=0.1))
    ask = _ask(_speak_then_listen(policy, speech_ms=1000, until_ms=1160))
    unsure_words = TurnVerdict(probability=0.12, heard_words=True, words_finished=True)
    assert policy.verdict(ask.ticket, unsure_words, now_ms=1180) is None


def test_after_a_pause_a_finished_statement_commits_at_the_resumed_probability() -> None:
    statement = TurnVerdict(probability=0.3, heard_words=True, words_finished=True)
    fresh = TurnPolicy(msgspec_replace(FINISHED, resumed_probability=0.25))
    ask = _ask(_speak_then_listen(fresh, speech_ms=1000, until_ms=1160))
    assert fresh.verdict(ask.ticket, statement, now_ms=1180) is None  # 0.3 < 0.7: no pause yet

    policy = TurnPolicy(msgspec_replace(FINISHED, resumed_probability=0.25))
    _pause_and_resume(policy, GOING_ON)
    assert policy.resumed
    ask = _next_ask(policy, 2520, 2700)
    assert ask.silence_ms <= 180  # judged as soon as any pause
    commit = policy.verdict(ask.ticket, statement, now_ms=ask.at_ms + 30)
    assert isinstance(commit, Commit) and commit.reason == "judged"
    assert commit.speech_end_ms == 2500


def test_after_a_pause_words_that_do_not_go_on_commit_at_resumed_silence_ms() -> None:
    s = msgspec_replace(FINISHED, resumed_silence_ms=700)
    policy = TurnPolicy(s)
    _pause_and_resume(policy, GOING_ON)
    for now in range(2520, 2661, 20):
        policy.frame(now, voiced=False)
    policy.transcribing()
    ask = policy.words(now_ms=2680)
    if not isinstance(ask, AskJudge):  # an audio judgement was pending: its verdict first
        assert policy.pending is not None
        ask = policy.verdict(policy.pending, UNSURE, now_ms=2680)
    assert isinstance(ask, AskJudge)
    assert policy.verdict(ask.ticket, WORDS_OK, now_ms=2700) is None  # 0.6 < 0.9
    decisions = [policy.frame(now, voiced=False) for now in range(2720, 3300, 20)]
    commits = [d for d in decisions if isinstance(d, Commit)]
    assert commits[0] == Commit(reason="resumed", at_ms=3200, speech_end_ms=2500)


def test_after_a_pause_the_audio_alone_never_commits_at_resumed_silence_ms() -> None:
    policy = TurnPolicy(msgspec_replace(FINISHED, resumed_silence_ms=700))
    _pause_and_resume(policy, GOING_ON)
    ask = _next_ask(policy, 2520, 2700)
    assert policy.verdict(ask.ticket, UNSURE, now_ms=ask.at_ms + 30) is None  # no words
    decisions = [policy.frame(now, voiced=False) for now in range(ask.at_ms + 40, 4200, 20)]
    commits = [d for d in decisions if isinstance(d, Commit)]
    assert commits[0].reason == "max_silence"


def test_after_a_pause_words_that_go_on_wait_for_max_silence() -> None:
    policy = TurnPolicy(FINISHED)
    _pause_and_resume(policy, GOING_ON)
    ask = _next_ask(policy, 2520, 2700)
    assert policy.verdict(ask.ticket, GOING_ON_VERDICT, now_ms=ask.at_ms + 30) is None
    decisions = [policy.frame(now, voiced=False) for now in range(ask.at_ms + 40, 4200, 20)]
    commits = [d for d in decisions if isinstance(d, Commit)]
    assert commits[0] == Commit(reason="max_silence", at_ms=4100, speech_end_ms=2500)


def test_a_new_utterance_is_not_resumed_and_a_pause_never_asked_about_does_not_resume() -> None:
    policy = TurnPolicy(FINISHED)
    _pause_and_resume(policy, GOING_ON)
    policy.begin(5000)
    assert not policy.resumed
    short = TurnPolicy(FINISHED)
    short.begin(0)
    for now in range(20, 1001, 20):
        short.frame(now, voiced=True)
    for now in range(1020, 1101, 20):  # 100 ms: shorter than judge_pause_ms, nothing asked
        assert short.frame(now, voiced=False) is None
    short.frame(1120, voiced=True)
    assert not short.resumed


GOING_ON_VERDICT = TurnVerdict(probability=0.9, heard_words=True, words_going_on=True)
