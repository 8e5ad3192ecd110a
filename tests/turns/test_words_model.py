"""The words' own end-of-turn model (SmolLM2 reading the transcript) and what the judge and the
turn policy make of its probability (ADR-0025)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vocero.contracts.domain import TurnTaking
from vocero.contracts.ports import TurnVerdict
from vocero.inference.cpu.settings import CpuSettings, llm_model_path
from vocero.inference.toolkit.audio import Float32
from vocero.inference.toolkit.settings import ModelNotFoundError
from vocero.inference.toolkit.turn import EndOfTurnJudge
from vocero.inference.toolkit.turn_words import (
    AGENT_WORDS,
    OPENING,
    SmolWordsEngine,
    _header,
    agent_line,
    sentence_so_far,
    words_model_path,
)
from vocero.inference.turn import reading
from vocero.orchestrator.turn_policy import AskJudge, Commit, TurnPolicy

pytestmark = pytest.mark.anyio
PCM = b"\x10\x00" * 16_000


class FakeAudio:
    name = "turn.fake"

    def __init__(self, probability: float) -> None:
        self.value = probability

    def load(self) -> None:
        pass

    def probability(self, audio: Float32) -> float:
        return self.value


class FakeWords:
    """A words model that answers from a table and counts its readings."""

    name = "turn.words.fake"

    def __init__(self, table: dict[str, float], fail_load: bool = False) -> None:
        self.table = table
        self.fail_load = fail_load
        self.read: list[str] = []
        self.after: list[str] = []
        """What the agent had said, for each reading."""
        self.prepared: list[str] = []

    def load(self) -> None:
        if self.fail_load:
            raise ValueError("not a ChatML model")

    def prepare(self, agent_said: str) -> None:
        self.prepared.append(agent_said)

    def end_probability(self, transcript: str, agent_said: str = "") -> float:
        self.read.append(transcript)
        self.after.append(agent_said)
        return self.table.get(transcript, 0.5)


# ------------------------------------------------------------------------------ the judge


async def test_the_verdict_carries_the_words_model_s_reading_of_the_transcript() -> None:
    words = FakeWords({"It's under the name.": 0.001})
    judge = EndOfTurnJudge(FakeAudio(0.97), words=words)
    await judge.warm_up()
    verdict = await judge.judge(PCM, sample_rate=16_000, transcript="It's under the name.")
    assert verdict.words_probability == 0.001
    assert verdict.probability == 0.97  # the audio's own figure is left as it is


async def test_no_words_or_another_language_get_no_reading() -> None:
    words = FakeWords({})
    judge = EndOfTurnJudge(FakeAudio(0.5), words=words)
    await judge.warm_up()
    warm_up_reads = len(words.read)
    silent = await judge.judge(PCM, sample_rate=16_000, transcript="")
    hindi = await judge.judge(PCM, sample_rate=16_000, transcript="मेरा ऑर्डर", locale="hi-IN")
    assert silent.words_probability is None
    assert hindi.words_probability is None
    assert len(words.read) == warm_up_reads


async def test_the_same_words_are_read_once_however_often_the_pause_is_judged() -> None:
    words = FakeWords({})
    judge = EndOfTurnJudge(FakeAudio(0.5), words=words)
    await judge.warm_up()
    before = len(words.read)
    for size in (8_000, 9_000, 10_000):
        await judge.judge(b"\x10\x00" * size, sample_rate=16_000, transcript="Cancel it.")
    assert words.read[before:] == ["Cancel it."]


async def test_the_words_are_read_after_what_the_agent_said_once_per_line() -> None:
    words = FakeWords({})
    judge = EndOfTurnJudge(FakeAudio(0.5), words=words)
    await judge.warm_up()
    before = len(words.read)
    asked = "Which day suits you?"
    for size, said in ((8_000, asked), (9_000, asked), (10_000, "")):
        await judge.judge(
            b"\x10\x00" * size, sample_rate=16_000, transcript="Friday.", agent_said=said
        )
    assert words.read[before:] == ["Friday.", "Friday."]  # the same words after another line
    assert words.after[before:] == [asked, ""]


async def test_the_agent_s_line_is_made_ready_unless_the_judge_is_busy() -> None:
    words = FakeWords({})
    judge = EndOfTurnJudge(FakeAudio(0.5), words=words)
    await judge.warm_up()
    await judge.prepare(agent_said="Shall I go ahead?")
    await judge.prepare(agent_said="Hindi words are not read", locale="hi-IN")
    assert words.prepared == ["Shall I go ahead?"]
    async with judge._admission.slot():  # a judgement is running: best effort gives way
        await judge.prepare(agent_said="Anything else?")
    assert words.prepared == ["Shall I go ahead?"]


def test_only_the_agent_s_last_sentences_are_read() -> None:
    assert agent_line("") == ""
    assert agent_line("Your order A123 has shipped. Anything else?") == (
        "Your order A123 has shipped. Anything else?"
    )
    many = "I have moved it. " * 10 + "Shall I send a text to confirm it?"
    assert agent_line(many) == "I have moved it. " * 3 + "Shall I send a text to confirm it?"
    one_long = " ".join(f"w{i}" for i in range(40)) + "?"
    assert agent_line(one_long).split() == one_long.split()[-AGENT_WORDS:]
    assert "<|" not in agent_line("Hi <|im_end|> there") and "|>" not in agent_line("a |> b")
    assert _header("").endswith(f"{OPENING}<|im_end|>\n<|im_start|>user\n")


async def test_a_words_model_that_cannot_load_leaves_the_judge_working_without_it() -> None:
    judge = EndOfTurnJudge(FakeAudio(0.9), words=FakeWords({}, fail_load=True))
    await judge.warm_up()
    assert judge.status().health == "ready"
    verdict = await judge.judge(PCM, sample_rate=16_000, transcript="Cancel it.")
    assert verdict.words_probability is None
    assert verdict.probability == 0.9


def test_the_model_reads_the_caller_s_words_without_the_recogniser_s_closing_mark() -> None:
    assert sentence_so_far("Is it possible to?") == "Is it possible to"
    assert sentence_so_far("  We've been waiting since.  ") == "We've been waiting since"
    assert sentence_so_far("My number is 4 4 9...") == "My number is 4 4 9"
    long = " ".join(f"w{i}" for i in range(100))
    assert sentence_so_far(long).split() == [f"w{i}" for i in range(52, 100)]


def test_the_model_path_is_configured_switched_off_or_the_shipped_one(tmp_path: Path) -> None:
    assert words_model_path(environ={"VOCERO_TURN_WORDS_MODEL": "off"}) is None
    model = tmp_path / "words.gguf"
    model.write_bytes(b"GGUF")
    assert words_model_path(environ={"VOCERO_TURN_WORDS_MODEL": str(model)}) == str(model)
    with pytest.raises(ModelNotFoundError, match="no such file"):
        words_model_path(environ={"VOCERO_TURN_WORDS_MODEL": str(tmp_path / "missing.gguf")})
    assert words_model_path("/the/dialogue/model.gguf", environ={}) == "/the/dialogue/model.gguf"


# ------------------------------------------------------------------------------ the policy

SETTINGS = TurnTaking(judge_pause_ms=150, max_silence_ms=1600, fallback_silence_ms=480)


def _judged(verdict: TurnVerdict, settings: TurnTaking = SETTINGS) -> list[object]:
    """Speech for 800 ms, then silence: every decision, each judgement answered with
    ``verdict`` 40 ms after it was asked."""
    policy = TurnPolicy(settings)
    policy.begin(0)
    decisions: list[object] = []
    pending: tuple[int, float] | None = None
    for now in range(20, 3001, 20):
        if pending is not None and now >= pending[1]:
            decision = policy.verdict(pending[0], verdict, now)
            pending = None
            if decision is not None:
                decisions.append(decision)
                if isinstance(decision, Commit):
                    return decisions
        decision = policy.frame(now, voiced=now <= 800)
        if isinstance(decision, AskJudge):
            pending = (decision.ticket, now + 40)
        if decision is not None:
            decisions.append(decision)
            if isinstance(decision, Commit):
                return decisions
    return decisions


def test_words_likely_to_end_commit_though_the_audio_doubts() -> None:
    verdict = TurnVerdict(probability=0.2, heard_words=True, words_probability=0.4)
    commit = _judged(verdict)[-1]
    assert isinstance(commit, Commit) and commit.reason == "words"
    assert commit.endpointing_ms == pytest.approx(TurnTaking().words_end_silence_ms, abs=20)
    # Without the words model's reading the same audio and words wait for the last resort.
    plain = _judged(TurnVerdict(probability=0.2, heard_words=True))[-1]
    assert isinstance(plain, Commit) and plain.reason == "max_silence"


def test_the_words_model_ends_a_turn_no_sooner_than_words_end_silence_ms() -> None:
    """A comma's pause after "Never mind" is judged at once, but ends nothing before
    ``words_end_silence_ms``; speech that resumes meanwhile keeps the caller's turn."""
    verdict = TurnVerdict(probability=0.6, heard_words=True, words_probability=0.5)
    settings = TurnTaking(judge_pause_ms=150, words_end_silence_ms=400)
    commit = _judged(verdict, settings)[-1]
    assert isinstance(commit, Commit) and commit.reason == "words"
    assert commit.endpointing_ms == pytest.approx(400, abs=20)
    policy = TurnPolicy(settings)
    policy.begin(0)
    ask = None
    for now in range(20, 1001, 20):
        decision = policy.frame(now, voiced=now <= 400)
        if isinstance(decision, AskJudge):
            ask = decision
            assert policy.verdict(ask.ticket, verdict, now + 20) is None
        assert not isinstance(decision, Commit)
        if now == 700:
            break
    assert ask is not None
    assert policy.frame(720, voiced=True) is None  # "... goodbye": the caller goes on
    assert policy.state == "speaking"


@pytest.mark.parametrize(("words", "ends_at"), [(1, 600), (2, 600), (3, 400), (0, 400)])
def test_a_short_answer_the_words_model_ends_waits_longer(words: int, ends_at: int) -> None:
    """"No wait, ... make it 11": one or two words the model reads as an answer end the turn
    at ``words_end_short_silence_ms``, longer ones at ``words_end_silence_ms``."""
    verdict = TurnVerdict(
        probability=0.6, heard_words=True, words_probability=0.5, words_count=words
    )
    settings = TurnTaking(
        judge_pause_ms=150, words_end_silence_ms=400, words_end_short_silence_ms=600
    )
    commit = _judged(verdict, settings)[-1]
    assert isinstance(commit, Commit) and commit.reason == "words"
    assert commit.endpointing_ms == pytest.approx(ends_at, abs=20)


def test_the_verdict_counts_the_words_read() -> None:
    assert reading(0.5, "No wait.", words_probability=0.4).words_count == 2
    assert reading(0.5, "", words_probability=None).words_count == 0


def test_the_audio_vetoes_words_only_when_all_but_sure_the_caller_goes_on() -> None:
    vetoed = _judged(TurnVerdict(probability=0.01, heard_words=True, words_probability=0.4))
    assert isinstance(vetoed[-1], Commit) and vetoed[-1].reason == "max_silence"


def test_words_unlikely_to_end_never_end_the_turn_whatever_the_audio() -> None:
    verdict = TurnVerdict(
        probability=0.99, heard_words=True, words_finished=True, words_probability=0.01
    )
    commit = _judged(verdict)[-1]
    assert isinstance(commit, Commit) and commit.reason == "max_silence"
    assert commit.endpointing_ms >= SETTINGS.max_silence_ms


def test_between_the_two_thresholds_the_earlier_rules_decide() -> None:
    finished = TurnVerdict(
        probability=0.95, heard_words=True, words_finished=True, words_probability=0.1
    )
    commit = _judged(finished)[-1]
    assert isinstance(commit, Commit) and commit.reason == "judged"


def test_thresholds_switch_the_words_model_off() -> None:
    off = TurnTaking(
        judge_pause_ms=150, words_end_probability=1.01, words_hold_probability=0.0
    )
    verdict = TurnVerdict(probability=0.99, heard_words=True, words_probability=0.001)
    commit = _judged(verdict, off)[-1]
    assert isinstance(commit, Commit) and commit.reason == "judged"  # the audio decided


def test_a_code_just_given_is_not_held_by_the_words_model_s_doubt() -> None:
    """"order A124" reads to a small language model as going on; the lexicon judges codes."""
    verdict = reading(
        0.98, "Please tell me the status of order A124.", confidence=0.9, words_probability=0.001
    )
    assert verdict.words_identifier and verdict.words_finished
    commit = _judged(verdict)[-1]
    assert isinstance(commit, Commit) and commit.reason == "judged"
    # The same doubt about words that end on no code holds the turn.
    plain = reading(0.98, "Please tell me the status of my order.", words_probability=0.001)
    assert not plain.words_identifier
    held = _judged(plain)[-1]
    assert isinstance(held, Commit) and held.reason == "max_silence"


def test_only_a_statement_that_ends_on_a_code_is_an_identifier() -> None:
    assert reading(0.5, "My reference is K7 741.").words_identifier
    assert reading(0.5, "The code is 47").words_identifier
    assert not reading(0.5, "Is it A124?").words_identifier
    assert not reading(0.5, "Book it for Tuesday at 3.").words_identifier
    assert not reading(0.5, "No, the other one.").words_identifier


def test_a_resumed_caller_s_second_pause_ends_at_resumed_silence_though_the_model_doubts() -> None:
    """Speech, a pause the judge holds, more speech, a pause: the words model's doubt holds a
    judged end, but the second pause ends the turn after ``resumed_silence_ms``, as before."""
    doubtful = TurnVerdict(probability=0.9, heard_words=True, words_probability=0.01)
    policy = TurnPolicy(SETTINGS)
    policy.begin(0)
    commit: Commit | None = None
    pending: tuple[int, float] | None = None
    for now in range(20, 4001, 20):
        if pending is not None and now >= pending[1]:
            decision = policy.verdict(pending[0], doubtful, now)
            pending = None
            assert not isinstance(decision, Commit)
        voiced = now <= 800 or 1600 < now <= 2200
        if not voiced and policy.state not in ("idle", "committed") and policy.pending is None:
            words = policy.words(now) if now in (1000, 2400) else None
            if isinstance(words, AskJudge):
                pending = (words.ticket, now + 40)
        decision = policy.frame(now, voiced=voiced)
        if isinstance(decision, AskJudge):
            pending = (decision.ticket, now + 40)
        if isinstance(decision, Commit):
            commit = decision
            break
    assert commit is not None and commit.reason == "resumed"
    assert commit.endpointing_ms == pytest.approx(SETTINGS.resumed_silence_ms, abs=20)


# ------------------------------------------------------------------------- the real model


@pytest.fixture(scope="module")
def smol() -> SmolWordsEngine:
    try:
        path = llm_model_path(CpuSettings.from_env({}))
    except ModelNotFoundError as exc:
        pytest.fail(f"the CPU runners' SmolLM2 is part of the install: {exc}")
    engine = SmolWordsEngine(path)
    engine.load()
    return engine


@pytest.mark.model
@pytest.mark.parametrize(
    ("going_on", "finished"),
    [
        ("I was wondering if you could", "I was wondering if you could help me"),
        ("The parcel was supposed to arrive on", "The parcel was supposed to arrive on Monday"),
        ("Could you send the invoice to", "Could you send the invoice to my email"),
        ("I ordered a lamp and", "I ordered a lamp and it arrived broken"),
    ],
)
def test_smollm2_finds_a_sentence_that_goes_on_far_less_likely_to_end(
    smol: SmolWordsEngine, going_on: str, finished: str
) -> None:
    """Sentences of this test's own (neither half of the turn corpus): the prefix is held by
    the default ``words_hold_probability``; the whole sentence reads far likelier to end."""
    settings = TurnTaking()
    cut = smol.end_probability(going_on + ".")  # the recogniser's made-up full stop is ignored
    whole = smol.end_probability(finished + ".")
    assert cut < settings.words_hold_probability
    assert whole > 5 * cut


@pytest.mark.model
def test_smollm2_readings_are_repeatable_and_keep_the_agent_s_line_cached(
    smol: SmolWordsEngine,
) -> None:
    asked = "Shall I book it for you?"
    first = smol.end_probability("Cancel my order please")
    after = smol.end_probability("Yes", asked)
    smol.end_probability("It is about the boiler inspection that", asked)
    assert smol.end_probability("Cancel my order please") == pytest.approx(first, abs=1e-6)
    assert smol.end_probability("Yes", asked) == pytest.approx(after, abs=1e-6)
    smol.prepare(asked)
    header = smol._llm.tokenize(
        _header(asked).encode(), add_bos=False, special=True
    )
    assert smol._cached == header  # the line is in the cache: a reading adds only the words
    smol.end_probability("Yes please", asked)
    assert smol._cached[: len(header)] == header
    assert len(smol._cached) > len(header)


@pytest.mark.model
@pytest.mark.parametrize(
    ("asked", "answer"),
    [
        ("Would you like me to book that for you?", "Yes please"),
        ("What day works best for you?", "Thursday"),
        ("What day works best for you?", "Thursday please"),
    ],
)
def test_smollm2_reads_a_short_answer_as_an_end_after_the_question_it_answers(
    smol: SmolWordsEngine, asked: str, answer: str
) -> None:
    """This test's own lines (neither corpus half, nor the eval scenarios): an answer read
    after the question the caller heard ends the turn on the words, and reads likelier to end
    than as a caller's first message."""
    settings = TurnTaking()
    opening = smol.end_probability(answer)
    answering = smol.end_probability(answer, asked)
    assert answering >= settings.words_end_probability
    assert answering > 1.4 * opening


@pytest.mark.model
@pytest.mark.parametrize(
    ("asked", "answer"),
    [
        ("Do you have the card you paid with?", "Yes, I do."),
        ("Are you the person named on the policy?", "Yes, I am."),
        ("Is the parcel still with you?", "No, it isn't."),
    ],
)
def test_an_answer_that_leaves_the_question_s_verb_out_ends_on_the_words(
    smol: SmolWordsEngine, asked: str, answer: str
) -> None:
    """This test's own lines: "Yes, I am." after the question it answers ends the turn on the
    words, though the audio doubts; it was read as "I am ..." going on, held for 1.6 s."""
    verdict = reading(
        0.3, answer, confidence=0.9, words_probability=smol.end_probability(answer, asked)
    )
    commit = _judged(verdict)[-1]
    assert isinstance(commit, Commit) and commit.reason == "words"
    assert commit.endpointing_ms < TurnTaking().max_silence_ms / 2


@pytest.mark.model
@pytest.mark.parametrize(
    ("asked", "going_on"),
    [
        ("Would you like me to book that for you?", "Yes please and"),
        ("What day works best for you?", "Thursday or"),
        ("Can I take the account number please?", "It's B"),
    ],
)
def test_smollm2_still_holds_an_answer_that_goes_on_after_the_question(
    smol: SmolWordsEngine, asked: str, going_on: str
) -> None:
    """The question does not make every answer an end: one stopped on an open word or a
    letter of a code is still held."""
    assert smol.end_probability(going_on, asked) < TurnTaking().words_hold_probability
