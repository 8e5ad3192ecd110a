"""Identifiers in an utterance ("order A123", "my 41 order", "B as in bravo five two", "or X78"):
spoken letters and numbers read as characters, dates, times, counts and amounts set aside, the
spelling matched against the field's schema pattern."""

from __future__ import annotations

import re

from vocero.contracts.values.dates import DAY_OF_MONTH, ISO_DATE, MONTH_DAY, ORDINAL_DAY
from vocero.contracts.values.numbers import NUMBER_RUN, number_run
from vocero.contracts.values.times import CLOCK, CLOCK_24, CLOCK_PART, spoken_times

# An optional letter prefix ("A123", "ap-7", "A 123" when capitals are spaced off by the
# recogniser, "c 19" when it prints a spelled letter in lower case, never "my 41"), digits with
# dashes or thousands commas, an optional letter suffix.
_ID_TOKEN = (
    r"(?:(?-i:[A-Z]{1,3})[-\s]|(?-i:[a-z])\s|[A-Za-z]{1,3}-?)?\d(?:[\d-]|,(?=\d{3}))*[A-Za-z]?"
)
_ID_START = r"(?<![\w'\u2019-])"
_ID_END = r"(?![\w-])"
_ID_SUFFIX = r"(?:\s((?-i:[A-Z]{1,3}))(?![\w-]))?"
"""Capital letters said apart after the characters ("5521 D", "LB12 XYZ"): part of the
identifier where the pattern takes them, or a lone letter that ends the sentence (see
:func:`_suffixed`)."""
_SENTENCE_END = re.compile(r"\s*(?:[.?!,;]|$)")
_ARTICLE_LETTERS = ("a", "i")
"""Lower-case letters that are also English words: a prefix only where the pattern wants one."""
_COUNT_WORDS = (
    r"items?|pieces?|units?|people|persons?|guests?|adults?|kids?|children|days?|nights?"
    r"|weeks?|months?|years?|hours?|minutes?|times?|box(?:es)?|bags?|tickets?|seats?|rooms?"
    r"|dollars?|euros?|pounds?|percent"
)
_COUNT = re.compile(rf"\b\d+\s+(?:more\s+|extra\s+)?(?:{_COUNT_WORDS})\b", re.IGNORECASE)
_MONEY = re.compile(r"[$\u20ac\u00a3]\s?\d[\d,.]*")
_AT_SMALL_NUMBER = re.compile(r"\b(?:at|around|by|until)\s+\d{1,2}\b", re.IGNORECASE)
_SPELLED_LETTER = re.compile(r"\b([A-Za-z]),?\s+(?:as\s+in|for|like)\s+([A-Za-z]+)\b")
_SPACED_DIGITS = re.compile(r"(?<=\d) (?=\d)")
_SPACED_LETTERS = re.compile(r"(?<![\w'])([A-Za-z])\s([A-Za-z])(?:\s([A-Za-z]))?\s(?=\d)")
_LETTER_NAMES = {
    "ay": "A", "bee": "B", "be": "B", "see": "C", "sea": "C", "cee": "C", "dee": "D",
    "ef": "F", "eff": "F", "gee": "G", "aitch": "H", "eye": "I", "jay": "J", "kay": "K",
    "el": "L", "ell": "L", "em": "M", "en": "N", "and": "N", "oh": "O", "pee": "P",
    "pea": "P", "cue": "Q", "queue": "Q", "are": "R", "or": "R", "ar": "R", "ess": "S",
    "es": "S", "tee": "T", "tea": "T", "you": "U", "vee": "V", "ex": "X", "why": "Y",
    "zed": "Z", "zee": "Z",
}  # fmt: skip
"""How a recogniser writes a letter said on its own ("I N J 1" as "i and j1", "R X 78" as
"or X78"): read as letters only in a run of letters right before an identifier's characters."""
_LETTER_WORD = rf"(?:[A-Za-z]|{'|'.join(sorted(_LETTER_NAMES, key=len, reverse=True))})"
_LETTER_RUN = re.compile(
    rf"(?<![\w'\u2019-])((?:{_LETTER_WORD}\s+){{1,3}})({_ID_TOKEN}){_ID_END}", re.IGNORECASE
)


def identifier_in(text: str, noun: str, pattern: str | None = None) -> str | None:
    """The identifier said after ``noun`` ("order A123", "order number 5582", "my 41 order",
    "order C nineteen"); with ``pattern``, only a spelling it accepts (see :func:`_canonical_id`).
    """
    cleaned = _identifier_text(text)
    stem = re.escape(noun.lower().rstrip("s"))
    candidates = [
        rf"\b{stem}s?\s+(?:number\s+|no\.?\s+|#\s*|id\s+)?({_ID_TOKEN}){_ID_END}{_ID_SUFFIX}",
        rf"{_ID_START}({_ID_TOKEN})()\s+{stem}s?\b",
        rf"\b{stem}s?\b.*?\b(?:it'?s|is|number)\s+({_ID_TOKEN}){_ID_END}{_ID_SUFFIX}",
    ]
    for regex in candidates:
        match = re.search(regex, cleaned, re.IGNORECASE)
        if match:
            value = _suffixed(match, cleaned, pattern, borrow=True)
            if value:
                return value
    after_noun = re.search(rf"\b{stem}s?\s+(?:number\s+)?(?={_LETTER_WORD}\s)", cleaned,
                           re.IGNORECASE)
    if after_noun:
        run = _LETTER_RUN.match(cleaned, after_noun.end())
        if run:
            return _canonical_id(_letters_joined(run), pattern)
    return None


def _suffixed(
    match: re.Match[str], cleaned: str, pattern: str | None, *, borrow: bool
) -> str | None:
    """The identifier of ``match`` (its characters, then the capitals said apart after them):
    with ``pattern``, with the capitals where it takes them ("LB12 XYZ"), else without; a lone
    capital that ends the sentence is the identifier's last character, pattern or not ("Glaze
    number 5521 D." is "5521D", never "5521")."""
    token, suffix = match.group(1), match.group(2) or ""
    if suffix:
        value = _canonical_id(f"{token} {suffix}", pattern, borrow=borrow)
        if value and pattern:
            return value
        if len(suffix) == 1 and _SENTENCE_END.match(cleaned, match.end()):
            return value  # the caller's last character: never dropped to fit a pattern
    return _canonical_id(token, pattern, borrow=borrow)


def _letters_joined(run: re.Match[str]) -> str:
    """A run of letters said one by one and the identifier after it, as one spelling
    ("i and j1" -> "INJ1")."""
    letters = "".join(_LETTER_NAMES.get(w.lower(), w.upper()) for w in run.group(1).split())
    return letters + run.group(2)


def bare_identifier(text: str, pattern: str | None, *, borrow: bool = True) -> str | None:
    """An identifier said without its noun, as the answer to "Which order is it?" ("It's A124",
    "A one two four", "number 5582", "APT 1001").

    Times, dates, counts and amounts are not identifiers ("at 3", "the 14th", "2 items", "$40").
    With ``pattern``, the first candidate with a spelling the pattern accepts. ``borrow=False``
    takes only spellings the caller said: never the pattern's literal prefix before bare digits
    ("Glaze number 5521" is no "FR-5521"), for a line that answers no question about the field.
    """
    cleaned = _identifier_text(text)
    found = rf"{_ID_START}({_ID_TOKEN}){_ID_END}{_ID_SUFFIX}"
    for match in re.finditer(found, cleaned, re.IGNORECASE):
        value = _suffixed(match, cleaned, pattern, borrow=borrow)
        if value:
            return value
    if pattern:  # letters said one by one before it, where the pattern wants them ("or X78")
        for run in _LETTER_RUN.finditer(cleaned):
            value = _canonical_id(_letters_joined(run), pattern)
            if value:
                return value
    return None


_DIGIT_WORD = r"(?:zero|oh|one|two|three|four|five|six|seven|eight|nine|double|triple)"
_GROUP_COMMA = re.compile(
    rf"\b([A-Z]|\d+|{_DIGIT_WORD}),\s+(?=(?:\d|{_DIGIT_WORD})\b)", re.IGNORECASE
)
"""A comma between the groups of a reference said aloud ("J T, two oh four, one seven")."""


def _identifier_text(text: str) -> str:
    """The utterance as identifiers are read from it: spoken letters and numbers as characters
    ("B as in bravo five two" -> "B 52", "b k one two" -> "BK 12"), then dates, times, counts
    and amounts blanked out."""
    spoken = spoken_times(_GROUP_COMMA.sub(r"\1 ", text.replace("\u2019", "'")))
    spoken = _SPELLED_LETTER.sub(_spelled_letter, spoken)
    spoken = NUMBER_RUN.sub(number_run, spoken)
    spoken = _SPACED_LETTERS.sub(_spaced_letters, spoken)
    masked = spoken
    for pattern in (
        ISO_DATE, MONTH_DAY, DAY_OF_MONTH, ORDINAL_DAY, CLOCK, CLOCK_24, CLOCK_PART,
        _COUNT, _MONEY, _AT_SMALL_NUMBER,
    ):  # fmt: skip
        masked = pattern.sub(lambda m: " " * len(m.group(0)), masked)
    return _SPACED_DIGITS.sub("", _ROUND_THEN_SMALL.sub(_added, masked))


_ROUND_THEN_SMALL = re.compile(r"(?<![\d-])(\d*[1-9](0+)) (\d+)\b")


def _added(match: re.Match[str]) -> str:
    """A round number and a smaller one after it are one number, as a recogniser prints "one
    thousand one" ("1000 1" -> "1001", "20 1" -> "21"); other digit runs are left as spelled."""
    round_, zeros, small = match.group(1), match.group(2), match.group(3)
    if len(small) > len(zeros):
        return match.group(0)
    return str(int(round_) + int(small))


def _spaced_letters(match: re.Match[str]) -> str:
    """Letters spelled one by one before digits as one prefix ("b k 1234" -> "BK 1234")."""
    return "".join(c for c in match.groups() if c).upper() + " "


def _spelled_letter(match: re.Match[str]) -> str:
    """A letter spelled with an example word ("B as in bravo") as the letter alone; kept as said
    when the example does not start with the letter."""
    letter, example = match.group(1), match.group(2)
    return letter if example[0].lower() == letter.lower() else match.group(0)


def _canonical_id(raw: str, pattern: str | None, *, borrow: bool = True) -> str | None:
    """The identifier as the caller spelled it, upper case, or ``None`` without a digit.

    Spaces and thousands commas go. A hyphen after a prefix of two or more letters is part of
    the spelling and stays ("APT-1001"); hyphens after a single letter or among digits are how a
    recogniser prints spelled-out characters ("A-1-2-3") and go. A lower-case "a" or "i" before
    the digits may be an article: it is a prefix only where the pattern wants one.

    With ``pattern``, the first spelling it accepts: as said, joined, with a dash between
    letters and digits ("APT 1001" -> "APT-1001"), the pattern's literal prefix before bare
    digits ("1001" -> "APT-1001") unless ``borrow`` is false.
    """
    split = re.fullmatch(r"([A-Za-z]{0,3})([-\s]*)(.*)", raw, re.DOTALL)
    assert split is not None  # the pattern admits any string
    prefix, separator, rest = split.groups()
    body = re.sub(r"[\s,-]", "", rest).upper()
    if not any(c.isdigit() for c in body):
        return None
    article = prefix in _ARTICLE_LETTERS and " " in separator
    keep_dash = "-" in separator and len(prefix) >= 2
    said = prefix.upper() + ("-" if keep_dash else "") + body
    if not pattern:
        return body if article else said
    variants = [said, prefix.upper() + body, f"{prefix.upper()}-{body}" if prefix else body]
    variants += [raw.upper(), raw, *([body] if article else [])]
    literal = re.match(r"\^?([A-Za-z]+-?)(?=[\[(\\])", pattern)
    if literal and not prefix and borrow:
        variants.append(literal.group(1) + body)
    return next((v for v in variants if pattern_accepts(pattern, v)), None)


def pattern_accepts(pattern: str, value: str) -> bool:
    """Whether a schema ``pattern`` accepts the whole value; a pattern Python cannot compile
    accepts nothing."""
    try:
        return re.fullmatch(pattern, value) is not None
    except re.error:
        return False
