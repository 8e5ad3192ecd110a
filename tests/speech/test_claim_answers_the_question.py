"""A claim is spoken only as an answer to what was asked, not for one shared word (issue 42).

Retrieval ranks claims by shared words; ``search_result`` offers as ``best`` (and lists) only the
claims that cover enough of the question's key words, and of those the ones covering most. A
ferry operator's catalog, with names no suite uses.
"""

from __future__ import annotations

from vocero.speech import answering
from vocero.speech.knowledge import search_result
from vocero.store.knowledge import ClaimHit


def hit(key: str, text: str, topics: list[str], score: float) -> ClaimHit:
    return ClaimHit(key=key, text=text, conditions=[], topics=topics, version=1, evidence=[],
                    score=score)  # fmt: skip


FARE = hit("fare.adult", "An adult crossing costs 18 euros each way.",
           ["fare", "price", "cost", "how much", "ticket"], 3.0)  # fmt: skip
LUGGAGE = hit("luggage.fee", "Bags over 20 kg are charged 5 euros each.",
              ["luggage", "bags", "charge", "weight"], 2.9)  # fmt: skip
BOARDING = hit("boarding.time", "Boarding closes 20 minutes before departure.",
               ["boarding", "check in", "closes", "late"], 1.0)  # fmt: skip


def test_a_claim_sharing_one_topic_word_does_not_answer() -> None:
    question = "Do you price match if another operator sold me a cheaper seat for the same trip?"
    result = search_result(question, [FARE, BOARDING])
    assert result["best"] == [] and result["claims"] == []


def test_only_the_claims_that_answer_are_offered_first_or_at_all() -> None:
    result = search_result("How much do you charge for an adult crossing these days?",
                           [LUGGAGE, FARE])  # fmt: skip
    assert result["best"] == ["fare.adult"], "the luggage fee shares only 'charge'"
    assert [c["key"] for c in result["claims"]] == ["fare.adult"]


def test_a_question_with_a_story_is_still_answered() -> None:
    question = "My bags are really heavy, nearly 25 kg, will you charge for them?"
    assert search_result(question, [LUGGAGE, FARE])["best"] == ["luggage.fee"]
    assert answering.answers("When does boarding close?", ["Boarding closes 20 minutes"])


def test_key_words_drop_filler_and_stem() -> None:
    assert answering.key_words("I was wondering whether you've got any walk-ins these days") == [
        "walk", "in"
    ]  # fmt: skip
    assert answering.covered("Are you open on Saturdays?", ["open on saturday"]) == 1.0
