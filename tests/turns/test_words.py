"""The words that say a sentence goes on, and how they cap a judge's probability."""

from __future__ import annotations

import pytest

from vocero.inference.turn import GOING_ON_CAP, weigh_words, words_go_on


@pytest.mark.parametrize(
    "text",
    [
        "My order number is",
        "My order number is...",
        "I'd like to, um",
        "I want to change the",
        "It's for\u2026",
        "The order was placed on.",
        "I ordered a blue jacket and",
        "My phone number is five five five,",
        "So, the thing is -",
    ],
)
def test_a_sentence_that_stops_mid_way_goes_on(text: str) -> None:
    assert words_go_on(text)


@pytest.mark.parametrize(
    "text",
    [
        "Where is my order?",
        "The code is 479.",
        "My phone number is 555-1234.",
        "Book it for Tuesday at 3.",
        "What is it for?",
        "That's all, thank you.",
        "",
        "   ",
    ],
)
def test_a_finished_sentence_or_no_words_does_not(text: str) -> None:
    assert not words_go_on(text)


def test_only_english_words_are_known() -> None:
    assert words_go_on("my order number is", "en-GB")
    assert not words_go_on("mi número de pedido es el", "es-ES")


def test_going_on_caps_the_probability_and_nothing_else_changes_it() -> None:
    assert weigh_words(0.99, "my order number is") == GOING_ON_CAP
    assert weigh_words(0.01, "my order number is") == 0.01
    assert weigh_words(0.42, "Where is my order?") == 0.42
    assert weigh_words(0.42, "") == 0.42
