"""The words that say a sentence goes on, and how they cap a judge's probability."""

from __future__ import annotations

import pytest

from vocero.inference.turn import (
    GOING_ON_CAP,
    IDENTIFIER_CONFIDENCE,
    MIN_CONFIDENCE,
    SURE_CONFIDENCE,
    capped,
    is_question,
    words_go_on,
    words_kind,
    words_sure,
)


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
        # A pronoun and its auxiliary go on, after yes or no too, unless the auxiliary is the
        # answer's last word.
        "I am",
        "Yes, it's",
        "Yes, I want",
        "No, my name is",
        "Do",
        "and so",
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
        # A time of day ends on a.m./p.m., not on the verb "am" (heard in the voice eval:
        # "... to Saturday at 11 AM." was held for 1.6 s).
        "Move it to Saturday at 11 AM.",
        "Friday at ten am",
        "Make it 9 p.m.",
        "at eleven pm.",
        # The answer to a yes-or-no question leaves its verb out: "Yes, I am." ends on the
        # auxiliary and was held for 1.6 s as "I am ...".
        "Yes, I am.",
        "Yes I do",
        "No, it is not.",
        "Yeah, we can.",
        "Oh yes, there is.",
        "Uh, I think so.",  # the development set's; "so" stands for the question
        "I don't think so",
        "Please do.",  # the development set's, after "Shall I email you a copy?"
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
    assert capped(0.99, words_kind("my order number is")) == GOING_ON_CAP
    assert capped(0.01, words_kind("my order number is")) == 0.01
    assert capped(0.42, words_kind("Where is my order?")) == 0.42
    assert capped(0.42, words_kind("")) == 0.42


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
    assert capped(0.97, words_kind(text)) == GOING_ON_CAP


def test_a_greeting_asked_as_a_question_still_goes_on_but_one_followed_by_words_does_not() -> None:
    # Whisper makes "Hello? Hello?" of "Hello, ..." cut at its pause (measured on bench ttfs);
    # a caller who only said "Hello?" is answered after max_silence_ms.
    assert words_go_on("Hello?")
    assert words_go_on("Hello? Hello?")
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
    assert words_kind(text) == "finished"
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
    assert words_kind(text) != "finished"


def test_only_english_words_read_as_finished() -> None:
    assert words_kind("Do I have any appointments coming up?", "en-GB") == "finished"
    assert words_kind("¿Tengo alguna cita la semana que viene?", "es-ES") != "finished"


# ------------------------------------------------------------- what the words vouch for


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("", "none"),
        ("¿Dónde está mi pedido?", "none"),  # a locale whose words are not known
        ("My order number is", "going_on"),
        ("Send it to you.", "going_on"),  # Whisper's "you" on "Send it to ..."
        ("send it to you", "going_on"),
        ("Can you?", "going_on"),  # "Can you, uh, ... check my order?"
        ("Could I,", "going_on"),
        ("book it first", "open"),  # Whisper did not close it
        ("My post code is SW1", "going_on"),  # a code being spelled out, not closed
        ("The reference is B4.", "open"),  # a code read out in parts
        ("The code is four seven.", "open"),
        ("Yes, that's right.", "closed"),
        ("I'd like to cancel.", "finished"),
        ("No, the other one.", "finished"),  # "one" is no digit here
        ("I need to reschedule for next Friday at 10.", "finished"),  # a time, not a code
        ("What is the status of order A 123?", "finished"),  # a question may end on a code
        ("That's all, thank you.", "finished"),
    ],
)
def test_each_transcript_is_sorted_by_what_it_says_of_the_end(text: str, kind: str) -> None:
    locale = "es-ES" if text.startswith("¿") else "en-US"
    assert words_kind(text, locale) == kind


def test_words_the_recogniser_was_unsure_of_never_vouch_for_the_end() -> None:
    made_up = "It was supposed to rhyme one."  # "It was supposed to arrive on ..." at 0.63
    assert words_kind(made_up, confidence=0.9) == "finished"
    assert words_kind(made_up, confidence=MIN_CONFIDENCE - 0.02) == "open"
    assert words_kind("I want to change the...", confidence=0.1) == "going_on"
    assert words_kind("Yes, that's right.", confidence=None) == "closed"


def test_questions_are_told_from_statements() -> None:
    assert is_question("Can I pay by card?")
    assert is_question("which appointments do I have.")
    assert not is_question("I'd like to cancel.")
    assert not is_question("")


# ------------------------------------------------- issue #29: open words, numbers, identifiers


@pytest.mark.parametrize(
    "text",
    [
        "Can you check whether my refund for",  # a preposition
        "It is about the boiler inspection that",  # a relative word
        "I'd like to know which",
        "I'll call back if",
        "It's under my wife's name and",  # a list in progress
        "Two towels, a bath mat and",
        "The problem is that",
        "I was told by your colleague that",
        "Um",
        "The code is 47",  # a number being spelled out, not closed by the recogniser
        "My phone number is 07912",
        "My customer number is seven three double",
    ],
)
def test_a_transcript_ending_on_an_open_word_or_a_number_in_progress_goes_on(text: str) -> None:
    assert words_go_on(text)
    assert words_kind(text, confidence=0.95) == "going_on"


@pytest.mark.parametrize(
    ("text", "locale"),
    [
        ("mujhe apne order ke baare mein", "hi-IN"),  # postposition: the verb is still to come
        ("मुझे अपने ऑर्डर के बारे में", "hi-IN"),
        ("मेरा ऑर्डर आया नहीं क्योंकि", "hi-IN"),
        ("naa order gurinchi", "te-IN"),
        ("నా ఆర్డర్ గురించి", "te-IN"),
        ("ఆర్డర్ రాలేదు ఎందుకంటే", "te-IN"),
    ],
)
def test_hindi_and_telugu_open_words_hold_the_turn(text: str, locale: str) -> None:
    assert words_go_on(text, locale)
    assert words_kind(text, locale) == "going_on"


@pytest.mark.parametrize(
    ("text", "locale"),
    [
        ("मेरा ऑर्डर नहीं आया", "hi-IN"),  # ends on the verb
        ("mera order nahi aaya", "hi-IN"),
        ("నా ఆర్డర్ రాలేదు", "te-IN"),
    ],
)
def test_a_hindi_or_telugu_sentence_ending_on_its_verb_is_left_to_the_audio(
    text: str, locale: str
) -> None:
    assert words_kind(text, locale) == "none"


def test_an_identifier_given_with_a_sure_recogniser_reads_as_finished() -> None:
    sure = IDENTIFIER_CONFIDENCE
    assert words_kind("My order number is C19.", confidence=sure) == "finished"
    assert words_kind("My order number is C19.", confidence=sure - 0.01) == "open"
    # a code cut in parts at a pause scored up to 0.85 on the tuning half: not finished there
    assert words_kind("The reference is B4.", confidence=0.85) == "open"
    assert words_kind("My order number is C19.") == "open"  # no confidence: not sure
    assert words_kind("The code is 4729.", confidence=0.9) == "finished"
    assert words_kind("B4.", confidence=0.9) == "open"  # a lone code is left to the audio


def test_sure_means_at_or_above_the_threshold() -> None:
    assert words_sure(SURE_CONFIDENCE) and words_sure(0.99)
    assert not words_sure(SURE_CONFIDENCE - 0.01) and not words_sure(None)


def test_a_finished_clause_ending_on_a_time_or_a_pronoun_one_is_no_number_in_progress() -> None:
    assert not words_go_on("I need to reschedule for next Friday at 10")
    assert not words_go_on("No, the other one")


def test_am_after_anything_but_a_number_is_still_the_verb() -> None:
    assert words_go_on("I am")
    assert words_go_on("The one I am")
