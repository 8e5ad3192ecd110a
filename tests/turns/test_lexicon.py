"""One lexicon per language (vocero/contracts/lexicon): what it holds and how it is found."""

from __future__ import annotations

import pytest

from vocero.contracts.lexicon import LEXICONS, for_locale, open_ending, words_of
from vocero.contracts.lexicon.base import open_table


@pytest.mark.parametrize(
    ("locale", "language"),
    [("en-US", "en"), ("en-GB", "en"), ("en", "en"), ("hi-IN", "hi"), ("te_IN", "te")],
)
def test_a_locale_finds_its_languages_lexicon(locale: str, language: str) -> None:
    lexicon = for_locale(locale)
    assert lexicon is not None and lexicon.language == language


def test_a_language_the_project_does_not_speak_has_none() -> None:
    assert for_locale("es-ES") is None
    assert for_locale("") is None


def test_every_language_has_open_words_of_several_kinds_digits_and_greetings() -> None:
    for lexicon in LEXICONS.values():
        assert {"conjunction", "preposition", "possessive", "filler"} <= set(
            lexicon.open_words.values()
        ), lexicon.language
        assert len(lexicon.digit_words) >= 10 and lexicon.greetings
        assert all(w == w.lower() and " " not in w for w in lexicon.open_words)


def test_words_keep_the_vowel_signs_of_devanagari_and_telugu() -> None:
    assert words_of("मुझे अपने ऑर्डर के बारे में") == ["मुझे", "अपने", "ऑर्डर", "के", "बारे", "में"]
    assert words_of("నా ఆర్డర్ గురించి") == ["నా", "ఆర్డర్", "గురించి"]
    assert words_of("I\u2019d like to, um...") == ["i'd", "like", "to", "um"]


@pytest.mark.parametrize(
    ("text", "locale", "kind"),
    [
        ("I'd like to check whether", "en", "conjunction"),
        ("it is about the boiler inspection that", "en", "relative"),
        ("a refund for", "en", "preposition"),
        ("my", "en", "possessive"),
        ("mera order aur", "hi", "conjunction"),
        ("मेरे ऑर्डर के बारे में", "hi", "preposition"),
        ("naa order gurinchi", "te", "preposition"),
        ("ఆర్డర్ రాలేదు కానీ", "te", "conjunction"),
        ("Where is my order", "en", None),
        ("मेरा ऑर्डर नहीं आया", "hi", None),
    ],
)
def test_the_open_ending_of_a_text(text: str, locale: str, kind: str | None) -> None:
    lexicon = for_locale(locale)
    assert lexicon is not None
    assert open_ending(words_of(text), lexicon) == kind


def test_a_word_listed_under_two_kinds_is_refused() -> None:
    with pytest.raises(ValueError, match="both"):
        open_table(article="the", preposition="the")
