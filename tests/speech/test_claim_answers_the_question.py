"""A claim is spoken only as an answer to what was asked, not for one shared word (issue 42).

Retrieval ranks claims by shared words; ``search_result`` offers as ``best`` (and lists) only the
claims that cover enough of the question's key words, and of those the ones covering most. A
ferry operator's catalog, with names no suite uses.
"""

from __future__ import annotations

from vocero.contracts import values
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


TERMINAL = hit("terminal.hours", "The ferry terminal is open every day from 6 AM to 10 PM.",
               ["terminal", "open", "hours", "opening", "drive down"], 2.5)  # fmt: skip
STORMS = hit("sailings.storms", "In a storm warning sailings are held in port until it passes.",
             ["storm", "weather", "wind", "cancelled", "held"], 1.5)  # fmt: skip
DELAYS = hit("sailings.delays", "A sailing held more than an hour gets a free rebooking.",
             ["delay", "late", "held", "rebook", "come back"], 2.0)  # fmt: skip
DANGER = hit("cargo.dangerous", "Fuel cans and gas bottles are never carried; leave them home.",
             ["dangerous", "fuel", "gas bottle", "gas bottles", "cans"], 1.0)  # fmt: skip


def test_the_question_after_a_scene_setting_clause_must_be_answered() -> None:
    """Tamarind: "When I take a trailer load to the transfer station, can I pay with cash or is
    it card only?" was answered with the station's opening hours."""
    question = "When I drive down to the ferry terminal, can I pay with cash or is it card only?"
    assert answering.main_clause(question) == "can I pay with cash or is it card only?"
    assert search_result(question, [TERMINAL])["claims"] == []
    opening = "When I drive down to the ferry terminal, what hours is it open?"
    assert search_result(opening, [TERMINAL])["best"] == ["terminal.hours"]
    assert answering.main_clause("Can I pay by card?") is None


def test_two_of_a_claims_own_topics_answer_a_long_story() -> None:
    """Tamarind: "I've got a few old tins of paint and a couple of car batteries to get rid of.
    Can you come and pick them up?" had no approved answer (2 of 11 key words covered)."""
    question = ("I've got a couple of old fuel cans and two gas bottles left over from the "
                "summer trip to the island with the kids and the dog. Can I bring them along?")
    assert search_result(question, [DANGER])["best"] == ["cargo.dangerous"]
    one = "I've got an old gas bottle from the summer trip left over in the shed somewhere."
    assert search_result(one, [DANGER])["claims"] == []  # one topic word of many


def test_the_sentence_that_asks_decides_between_answers() -> None:
    """Tamarind: "My bins go out on a Friday. What happens on Christmas Day, do you still come?"
    was answered with the missed-bin claim, which shared more of the whole line's words."""
    question = "My sailing is always late and held. What happens in a storm, is it cancelled?"
    assert answering.asked_sentences(question) == " What happens in a storm, is it cancelled?"
    assert search_result(question, [DELAYS, STORMS])["best"] == ["sailings.storms"]


def test_topics_any_question_says_prove_nothing() -> None:
    """Found while fixing the long story: "what time does the number 12 bus leave for town in
    the morning?" said two topics of the put-out-your-bins claim, "what time" and "morning"."""
    check_in = hit("checkin.time", "Check in by 7 AM on the morning you sail.",
                   ["what time", "morning", "check in", "early"], 1.0)  # fmt: skip
    bus = "While I've got you, what time does the number 12 bus leave for town in the morning?"
    assert search_result(bus, [check_in])["claims"] == []


def test_how_long_it_goes_on_for_asks_the_running_time() -> None:
    """Juniper: "Before I say yes, how long does it go on for? I've a bus to catch." had no
    approved answer though the catalog's running times claim says "how long" and "duration"."""
    crossing = hit("crossing.length", "The crossing takes 2 hours 10 minutes.",
                   ["running time", "how long", "length", "duration", "arrive"], 1.0)  # fmt: skip
    question = "Before I say yes, how long does it go on for? I've a bus to catch."
    asked = " ".join([question, *values.length_asked(question)])
    assert search_result(question, [crossing], asked=asked)["best"] == ["crossing.length"]
    assert values.length_asked("Is there a bar?") == []
