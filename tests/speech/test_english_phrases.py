"""The one English list and name rule every spoken sentence is built with
(:mod:`vocero.contracts.english`, issue 42): a list never ends on a conjunction or a separator,
an empty item never shows, and an internal name is never said as written."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from vocero.contracts.english import (
    action_words,
    capability,
    join_list,
    list_items,
    name_words,
    past_participle,
)

_PIECES = st.sampled_from(
    [
        "",
        " ",
        "  ",
        ".",
        ",",
        " , ",
        "and",
        "or",
        " and ",
        "look up",
        "move it",
        "the next free",
        "slot",
        "x",
        "a b",
        "and .",
        "c,",
        "d and",
        "; e",
        "f.",
        "\t",
        "-",
    ]
)
ITEMS = st.lists(
    st.one_of(
        st.text(alphabet="ab ,.;:-\t", max_size=8),
        st.lists(_PIECES, max_size=4).map(" ".join),
    ),
    max_size=6,
)


@settings(max_examples=400, deadline=None)
@given(ITEMS, st.sampled_from(["and", "or"]))
def test_a_joined_list_is_a_finished_phrase(items: list[str], conj: str) -> None:
    text = join_list(items, conj)
    assert not re.search(r"(?:^|\s)(?:and|or|but|nor)$", text), text
    assert not text.endswith((",", ";", ":", " ", ".")), text
    assert not text.startswith((",", " ", ";")), text
    assert "  " not in text and ", and ." not in text and " and ." not in text, text
    assert ", ," not in text and ",," not in text, text
    kept = list_items(items)
    if not kept:
        assert text == ""
    for item in kept:  # every item that says something is said, in the sentence as it stands
        assert item in text and item.strip() == item and item


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["", " ", "\t", ".", ", "]), max_size=5))
def test_items_that_say_nothing_never_show(blanks: list[str]) -> None:
    assert join_list([*blanks, "look up an order", *blanks]) == "look up an order"
    assert join_list(["a", *blanks, "b", *blanks, "c"]) == "a, b, and c"
    assert join_list(blanks) == ""


def test_lists_read_as_english() -> None:
    assert join_list([]) == ""
    assert join_list(["a"]) == "a"
    assert join_list(["a", "b"]) == "a and b"
    assert join_list(["a", "b", "c"]) == "a, b, and c"
    assert join_list(["a", "b", "c"], "or") == "a, b, or c"
    assert join_list(["a", "a"]) == "a and a", "two records may read alike: both are said"


IDENTIFIERS = st.text(alphabet="abcXYZ_.-019 ", min_size=0, max_size=24)


@settings(max_examples=300, deadline=None)
@given(IDENTIFIERS)
def test_an_internal_name_is_said_as_words(name: str) -> None:
    words = name_words(name)
    verb, noun = action_words(name)
    for said in (words, verb, noun):
        assert "_" not in said and not re.search(r"[A-Za-z]\.[A-Za-z]", said), said
        assert "  " not in said and said == said.strip(), said
        assert said == said.lower()
    assert words, "a field always has words"


def test_names_turned_into_words() -> None:
    assert name_words("new_slot_id") == "new slot"
    assert name_words("booking_ref") == "booking reference"
    assert name_words("customerEmail") == "customer email"
    assert name_words("id") == "reference"
    assert name_words("slot") == "slot"
    assert action_words("bookings.shift") == ("shift", "booking")
    assert action_words("crm_update_v2") == ("update", "")
    assert action_words("svc.do_thing") == ("change", "thing")
    assert action_words("appointments.reschedule") == ("reschedule", "appointment")
    assert action_words("orders.status") == ("change", "order status")
    assert past_participle("shift") == "shifted"
    assert past_participle("cancel") == "cancelled"
    assert past_participle("send") == "sent"
    assert past_participle("look up") == "looked up"


def test_a_capability_is_a_verb_phrase_or_nothing() -> None:
    assert capability("Look up one of the caller's orders. Read only.") == (
        "look up one of the caller's orders"
    )
    assert capability("Returns the status of an order.") == "tell you the status of an order"
    assert capability("Moves a booking to another day.") == "move a booking to another day"
    assert capability("The next free slot for a service.") == (
        "tell you about the next free slot for a service"
    )
    assert capability("", "bookings.shift") == "shift your booking"
    assert capability("", "crm_update_v2") == "", "a name that says nothing is not a capability"
    assert capability("", "svc.do_thing") == "", "no verb in the name: nothing is guessed"
    assert capability(" . ", "") == ""


def test_a_capability_is_what_the_tool_does_without_its_details() -> None:
    """Beacon: the capability list read "move a booked lesson to a new time; when is the new
    start as an RFC 3339 date-time with its UTC offset" aloud."""
    assert capability("Move a booked trip to a new time; when is the new start as RFC 3339.") == (
        "move a booked trip to a new time"
    )
    assert capability("Book a climb for a member with a guide, and say where to meet.") == (
        "book a climb for a member with a guide"
    )
    assert capability("List a member's upcoming climbs, soonest first.") == (
        "list a member's upcoming climbs"
    )
    assert capability("Add an extra (chalk, rope or a helmet) to a climb.") == (
        "add an extra to a climb"
    )
    assert capability("Change the time, day or place of a climb.") == (
        "change the time, day or place of a climb"
    )


def test_a_catalogs_capability_is_answering_questions_about_its_topics() -> None:
    """Beacon: "... and beacon Driving School's approved answers about prices" was said."""
    assert capability("Crag Hut's approved answers about prices, ropes and hours.") == (
        "answer questions about prices, ropes and hours"
    )
