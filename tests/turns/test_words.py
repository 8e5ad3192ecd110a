"""The words that say a sentence goes on, and how they cap a judge's probability."""

from __future__ import annotations

import pytest

from vocero.inference.turn import GOING_ON_CAP, weigh_words, words_finish, words_go_on


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


@pytest.mark.parametrize(
    "text",
    [
        "Hello.",
        "Hello,",
        "Hi there.",
        "Good morning,",
    ],
)
def test_a_lone_greeting_at_a_pause_goes_on(text: str) -> None:
    assert words_go_on(text)
    assert weigh_words(0.97, text) == GOING_ON_CAP


def test_a_greeting_asked_as_a_question_or_followed_by_words_does_not() -> None:
    assert not words_go_on("Hello?")
    assert not words_go_on("Hello, who am I speaking with?")


@pytest.mark.parametrize(
    "text",
    [
        "What can you help me with today?",
        "Do I have any appointments coming up?",
        "Please send the receipt to my email.",
        "That's all, thank you.",
        # A question Whisper closed with "." that ends on a preposition or an auxiliary.
        "which appointments do I have.",
        "Who am I speaking with.",
    ],
)
def test_a_closed_clause_of_four_words_or_more_reads_as_finished(text: str) -> None:
    assert words_finish(text)
    assert not words_go_on(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Can you help?",  # fewer than four words
        "Yes.",
        "Hello.",
        "My order number is",  # not closed
        "I want to change the...",  # trails off
        "The order was placed on.",  # ends on a preposition, not a question
        "What is the status of the.",  # a question, but it ends on an article
        "The code is four seven.",  # a list of digits read out
        "The code is 47.",  # or a code, in parts
        "My postcode is SW1.",
        "I'd like to speak to you.",  # Whisper's "you" on a trailing pause
        "My phone number is five five five,",
    ],
)
def test_an_open_short_or_doubtful_transcript_does_not_read_as_finished(text: str) -> None:
    assert not words_finish(text)


def test_only_english_words_read_as_finished() -> None:
    assert words_finish("Do I have any appointments coming up?", "en-GB")
    assert not words_finish("¿Tengo alguna cita la semana que viene?", "es-ES")
