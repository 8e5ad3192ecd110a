"""The ``promised_unbooked`` detector on its labelled corpus, and the end-of-session review."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from followup_support import REPO, START

from vocero.contracts.clock import VirtualClock
from vocero.followups.promises import is_promise, promises, score
from vocero.followups.records import FollowupDraft, new_id
from vocero.followups.review import HeardLine, SessionReviews, summarisable
from vocero.followups.sql import SqlFollowupStore
from vocero.store import Store
from vocero.store.repositories import Conversations

CORPUS = REPO / "fixtures" / "followups" / "promises.yaml"


def labelled(section: str) -> list[tuple[str, bool]]:
    data = yaml.safe_load(CORPUS.read_text())
    return [(item["text"], bool(item["promise"])) for item in data[section]]


def test_the_corpus_covers_three_languages_and_both_labels() -> None:
    items = labelled("items") + labelled("held_out")
    assert len(items) >= 120
    assert {True, False} == {label for _, label in items}
    text = " ".join(t for t, _ in items)
    assert any("\u0900" <= c <= "\u097f" for c in text)  # Devanagari
    assert any("\u0c00" <= c <= "\u0c7f" for c in text)  # Telugu


def test_precision_and_recall_on_the_labelled_corpus() -> None:
    built_with = score(labelled("items"))
    held_out = score(labelled("held_out"))
    assert (built_with.precision, built_with.recall) >= (0.95, 0.95), built_with
    # the figures reported in the notes; a regression below them fails here
    assert held_out.precision >= 0.9, held_out.false_alarms
    assert held_out.recall >= 0.6, held_out.misses


@pytest.mark.parametrize(("sentence", "promise"), [
    ("Someone will call you back tomorrow.", True),
    ("Shall I have someone call you tomorrow?", False),  # an offer is not a promise
    ("I can arrange a call back if you like.", False),
    ("Nobody will call you today.", False),
    ("Hum aapko kal call karenge.", True),
    ("మేము మీకు రేపు కాల్ చేస్తాము.", True),
    ("Kya hum aapko kal call karein?", False),
])
def test_promise_or_not(sentence: str, promise: bool) -> None:
    assert is_promise(sentence) is promise


def test_only_the_promise_sentence_of_a_reply_is_named() -> None:
    found = promises("Your order has shipped. Someone will ring you at four. Anything else?")
    assert [p.text for p in found] == ["Someone will ring you at four."]


@pytest.mark.parametrize(("caller", "expected"), [
    (["hi"], False),
    (["call me back please"], False),  # one line, four words: never summarised
    (["please call me back tomorrow"], True),  # five words
    (["hi", "bye"], True),  # two lines
    ([], False),
])
def test_short_calls_are_never_summarised(caller: Sequence[str], expected: bool) -> None:
    lines = [HeardLine(role="user", text=t) for t in caller]
    lines.append(HeardLine(role="assistant", text="Someone will call you.", generation_id="g"))
    assert summarisable(lines) is expected


# ------------------------------------------------------------------------------ review


class Lines:
    def __init__(self) -> None:
        self.by_session: dict[str, list[HeardLine]] = {}

    async def __call__(self, session_id: str) -> Sequence[HeardLine]:
        return self.by_session.get(session_id, [])


async def new_session(store: Store) -> str:
    session_id = new_id("ses")
    await Conversations(store).create_session(
        session_id=session_id, tenant_id="acme", subject_ref="sub_x", profile_id="demo",
        profile_version="1")
    return session_id


CALL = [HeardLine(role="user", text="I need help with my invoice please"),
        HeardLine(role="assistant", text="Sure. Someone will call you back tomorrow.",
                  generation_id="gen_1"),
        HeardLine(role="user", text="thanks"),
        HeardLine(role="assistant", text="Shall I have someone call you at four?",
                  generation_id="gen_2")]


@pytest.mark.anyio
async def test_an_unbacked_promise_is_a_finding_once(db_url: str, tmp_path: Path) -> None:
    store = Store.open(db_url)
    counted: list[str] = []
    try:
        sql, lines = SqlFollowupStore(store), Lines()
        reviews = SessionReviews(sql, lines, VirtualClock(start=START.timestamp()),
                                 on_finding=counted.append)
        unbacked, backed, short = [await new_session(store) for _ in range(3)]
        lines.by_session = {unbacked: CALL, backed: CALL, short: [
            HeardLine(role="user", text="bye"),
            HeardLine(role="assistant", text="We'll call you at four.", generation_id="g")]}
        await sql.record(FollowupDraft(
            session_id=backed, tenant_id="acme", subject_ref="sub_x", when_text="tomorrow",
            due_at=START + timedelta(days=1), timezone="UTC", channel="phone", reason="invoice",
            operation_id=new_id("op")), START)
        [finding] = await reviews.review(unbacked)
        assert (finding.kind, finding.generation_id, finding.text) == (
            "promised_unbooked", "gen_1", "Someone will call you back tomorrow.")
        assert await reviews.review(unbacked) == []  # a second close stores nothing new
        assert await reviews.review(backed) == []  # a record backs it
        assert await reviews.review(short) == []  # never summarised
        assert (await sql.findings(kind="promised_unbooked")).items == [finding]
        assert counted == ["promised_unbooked"]
    finally:
        await store.close()
