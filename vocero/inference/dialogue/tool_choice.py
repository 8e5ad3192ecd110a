"""Which tool a caller line means when the rules leave it to the intent model.

The dialogue manager's routing (:func:`.dialogue.decide`) asks the rules (:mod:`.router`) first;
these readers refine or replace what they found by the line's values: the tool a spoken
identifier belongs to, a tool the line fills more completely, the tool that takes a value said
by name, the tool a wh-question about a record looks up, and whether a line says more than
values at all. They never await and keep no state.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from typing import Protocol

from vocero.contracts.domain import ToolDefinition
from vocero.contracts.lexicon import consent
from vocero.contracts.lexicon.base import alternation
from vocero.contracts.lexicon.en import LEXICON
from vocero.inference.dialogue import cues, intents, router, schema, small_talk
from vocero.inference.dialogue.things import option_said, stem

TOOL_CONFIDENCE = 0.5
"""The intent model's probability at which it opens a task the rules did not recognise."""
_CLOCK_NUMBERS = alternation(
    w for w, v in LEXICON.numbers.cardinals.items() if 1 <= v <= 12 or v in (15, 30)
)
"""Number words of a clock time: the hours, "fifteen" and "thirty" minutes."""
_VALUE_WORDS = re.compile(
    r"\b(?:\d\S*|[a-z]{1,3}-?\d\S*|a\.?m\.?|p\.?m\.?|at|on|in|the|by|around|of|and|or|"
    r"next|this|coming|today|tonight|tomorrow|morning|afternoon|evening|noon|midday|week|"
    rf"{alternation(LEXICON.calendar.weekdays)}|o'?clock|half|quarter|past|to|"
    rf"{alternation(LEXICON.calendar.months)}|"
    rf"{_CLOCK_NUMBERS}|forty-?five|"
    r"please|ok|okay|yes|no|it'?s|it|is|make|say|let's|lets|how|about)\b",
    re.I,
)


class Ranker(Protocol):
    """The intent model as these readers consult it (the dialogue manager's memo of it)."""

    def rank(self, text: str) -> list[tuple[str, float]]: ...

    def decide(self, text: str) -> intents.Decision: ...


def named_by_identifier(
    text: str, tools: Sequence[ToolDefinition], model: Ranker, today: dt.date
) -> ToolDefinition | None:
    """The tool a line's identifier belongs to ("what's booked under V X two zero four one"):
    of the tools whose identifier pattern accepts it, the one the intent model ranks first."""
    taking = cues.identified_tools(text, tools)
    if len(taking) <= 1:
        return taking[0] if taking else None
    ranks = dict(model.rank(small_talk.without_pleasantries(text)))
    # The tool the line's values fill most ("a gas reading of 3150 for 40021877": the meter
    # type and the number too, not only the account), then the model's rank.
    filled = {t.name: len(router.fill_arguments(t, text, today)[0]) for t in taking}
    return max(taking, key=lambda t: (filled[t.name], ranks.get(t.name, 0.0)))


def better_fit(
    text: str,
    found: router.Route,
    tools: Sequence[ToolDefinition],
    model: Ranker,
    today: dt.date,
    now: dt.datetime | None,
) -> router.Route:
    """An incomplete request the rules found by one shared word ("my gas meter") gives way to
    the tool the intent model names confidently when the line leaves that one less to ask
    ("Can a technician come ... on Thursday at 4:15?" books the visit, it is no reading)."""
    named = model.decide(small_talk.without_pleasantries(text))
    ranks = dict(model.rank(small_talk.without_pleasantries(text)))
    others = [t for t in cues.described_tools(text, tools) if not t.builtin]
    confident = next((t for t in tools if t.name == named.intent), None)
    if confident is not None and not confident.builtin and named.score >= TOOL_CONFIDENCE:
        others.append(confident)
    others.extend(_filled_more(text, found, tools, today, now))
    best: router.Route = found
    for other in others:
        if found.tool is not None and other.name == found.tool.name:
            continue
        arguments, missing, model_fill = router.fill_arguments(other, text, today, now=now)
        if len(arguments) < len(found.arguments):
            continue  # it would drop values the caller said ("booth B on Friday at 4")
        better = len(missing) < len(best.missing) or (
            len(missing) == len(best.missing)
            and best.tool is not None
            and ranks.get(other.name, 0.0) > ranks.get(best.tool.name, 0.0)
        )
        if better:
            best = router.Route(other, arguments, tuple(missing), tuple(model_fill), learned=True)
    return best


def _filled_more(
    text: str,
    found: router.Route,
    tools: Sequence[ToolDefinition],
    today: dt.date,
    now: dt.datetime | None,
) -> list[ToolDefinition]:
    """The one tool the line's values fill with nothing left to ask, when the rules' tool
    (found by one word: "reserve") would still ask for two or more: "reserve Piranesi on card
    2731… to collect at the Main Library" places a hold (a title, a card and a branch), it
    does not book a room with no room, day or length said. It must take at least two of the
    line's values, and more than the rules' tool took."""
    if found.tool is None or len(found.missing) < 2:
        return []
    fuller: list[tuple[int, ToolDefinition]] = []
    for tool in tools:
        if tool.builtin or tool is found.tool:
            continue
        arguments, missing, _ = router.fill_arguments(tool, text, today, now=now)
        if not missing and len(arguments) >= 2 and len(arguments) > len(found.arguments):
            fuller.append((len(arguments), tool))
    most = max((n for n, _ in fuller), default=0)
    best = [tool for n, tool in fuller if n == most]
    return best if len(best) == 1 else []


_LEANING = 0.35
"""The intent model's probability at which a tool it ranks first, clearly ahead, is taken
when the line also says a word of that tool's own action name."""
_AHEAD = 0.15


def named_by_own_word(
    text: str,
    tools: Sequence[ToolDefinition],
    model: Ranker,
    today: dt.date,
    now: dt.datetime | None = None,
) -> ToolDefinition | None:
    """The tool the intent model leans to (first, under its confidence) when the line says a
    word of the tool's action name and either the tool is clearly ahead or the line gives it a
    value: "What times are free on Saturday the 19th?" for ``lessons.free_slots`` (its day);
    never a built-in or the catalog search."""
    ranked = model.rank(small_talk.without_pleasantries(text))
    if not ranked:
        return None
    (first, score), runner_up = ranked[0], (ranked[1][1] if len(ranked) > 1 else 0.0)
    tool = next((t for t in tools if t.name == first), None)
    if tool is None or tool.builtin or score < _LEANING:
        return None
    if score - runner_up < _AHEAD and not router.fill_arguments(tool, text, today, now=now)[0]:
        return None
    action = {stem(w) for w in re.split(r"[^a-z]+", tool.name.lower().rsplit(".", 1)[-1])}
    said = {stem(w) for w in re.findall(r"[a-z]+", text.lower())}
    return tool if (action - {""}) & said else None


def named_by_value(
    text: str,
    tools: Sequence[ToolDefinition],
    today: dt.date | None = None,
    now: dt.datetime | None = None,
) -> ToolDefinition | None:
    """The one tool that takes a value the line says by name: a value of a field's ``enum`` that
    no other tool's field lists (a doctor's name, a store), or of those that list it, the one
    the line fills whole; a line the intent model sent to no tool is then that tool's request,
    not out of scope. A bare yes ("Yes, go ahead.") names
    no value: it answers an offer or a read-back, it never opens a task of its own."""
    if consent.classify(text) == "confirm":
        return None
    taking: list[ToolDefinition] = []
    for tool in tools:
        properties = schema.model_facing(tool).get("properties", {})
        for name, prop in properties.items():
            if not isinstance(prop, dict):
                continue
            values = prop.get("enum") or prop.get(schema.OPTIONS_KEY)
            named = [v for v in values or [] if isinstance(v, str) and len(v) >= 4]
            kind = router.field_kind(name, prop)
            said = (
                router.fill_arguments_one(tool, name, text) is not None
                if kind == "enum"
                else kind == "option" and option_said(text, named) is not None
            )
            if named and said:
                taking.append(tool)
                break
    if len(taking) > 1 and today is not None:  # "Is A Taste of Kerala on next Wednesday?"
        taking = [t for t in taking if not any(router.fill_arguments(t, text, today, now=now)[1:])]
    return taking[0] if len(taking) == 1 else None


def filled_by_line(
    text: str, tools: Sequence[ToolDefinition], today: dt.date, now: dt.datetime | None
) -> ToolDefinition | None:
    """The one tool the line names by a word only its own name or description has ("what hours
    have you got spare" of "the spare throwing hours ...") and whose every required field the
    line's values fill ("for a kick wheel on Thursday the 10th of December"): a request for what
    that tool does, not out of scope, even where the intent model was never shown such a line."""
    complete: list[ToolDefinition] = []
    for tool in cues.described_tools(text, tools):
        if tool.builtin:
            continue
        arguments, missing, model_fill = router.fill_arguments(tool, text, today, now=now)
        if arguments and not missing and not model_fill:
            complete.append(tool)
    return complete[0] if len(complete) == 1 else None


_WH_QUESTION = re.compile(r"^\W*(?:what|which|when|where|who|whose|how)\b", re.IGNORECASE)


def _asks_wh(text: str) -> bool:
    """A wh-question, after any hello ("Kia ora, when's my rubbish getting picked up?")."""
    return bool(_WH_QUESTION.search(small_talk.without_pleasantries(text)))


def looked_up(
    text: str,
    tool: ToolDefinition,
    tools: Sequence[ToolDefinition],
    today: dt.date,
    now: dt.datetime | None,
) -> ToolDefinition:
    """A wh-question about a record asks what a tool can tell, not for a change: when the
    model's tool would need more than the line says (a reason, a new time) and another tool
    that takes the line's identifier needs nothing more, the question is that tool's ("What's
    booked under VX-2041?" looks the visit up; it never opens a call-off). Only for lines the
    rules left to the model: a change said in so many words is routed before this."""
    if not _asks_wh(text):
        return tool
    _, missing, model_fill = router.fill_arguments(tool, text, today, now=now)
    if not missing and not model_fill:
        return tool
    for other in cues.identified_tools(text, tools):
        arguments, missing, model_fill = router.fill_arguments(other, text, today, now=now)
        if other is not tool and arguments and not missing and not model_fill:
            return other
    return tool


def overruled(
    text: str,
    found: router.Route,
    tools: Sequence[ToolDefinition],
    today: dt.date,
    now: dt.datetime | None,
) -> router.Route:
    """The rules' tool, found by its domain or a shared word but not its action, gives way to
    the tool the line is about: a wh-question's lookup (:func:`looked_up`: "What day do my bins
    go out? It's TP 208 340." reads the collection days, it reports no missed bin), or the tool
    the line's values fill whole (:func:`fuller`: "two for The Snow Queen on Sunday at eleven,
    stalls please, the name's Dawson" books them; it asks no times)."""
    if found.tool is None or router.action_said(found.tool, text):
        return found
    asked = found.tool
    if found.missing:
        asked = looked_up(text, asked, tools, today, now)
    asked = fuller(text, asked, tools, today, now)
    if asked is found.tool:
        return found
    arguments, missing, model_fill = router.fill_arguments(asked, text, today, now=now)
    return router.Route(asked, arguments, tuple(missing), tuple(model_fill))


def fuller(
    text: str,
    tool: ToolDefinition,
    tools: Sequence[ToolDefinition],
    today: dt.date,
    now: dt.datetime | None,
) -> ToolDefinition:
    """The tool the line's values fill completely when the model's takes fewer of them: "a 12
    month plan on 40021877 with the first payment on the 20th" sets a plan up, it does not
    list the plans that account can have. Never for a wh-question (:func:`looked_up`)."""
    if _asks_wh(text):
        return tool
    taken = len(router.fill_arguments(tool, text, today, now=now)[0])
    identified = cues.identified_tools(text, tools)
    # "I'd like two for The Snow Queen on Sunday at eleven, stalls please. The name's Dawson."
    # fills every field of the booking (three values at least): no question of what's on.
    others = [*identified, *(t for t in tools if not t.builtin and t not in identified)]
    for other in others:
        arguments, missing, model_fill = router.fill_arguments(other, text, today, now=now)
        enough = len(arguments) > taken and (other in identified or len(arguments) >= 3)
        if other is not tool and enough and not missing and not model_fill:
            return other
    return tool


def asks_for_something(text: str) -> bool:
    """Whether the line says more than values (days, times, numbers, references)."""
    rest = _VALUE_WORDS.sub(" ", small_talk.without_pleasantries(text).lower())
    return any(len(w) > 1 for w in re.findall(r"[a-z']+", rest))


_FIRST_CLAUSE = re.compile(r"^(?P<ask>[^,;]{12,}?)\s*(?:,|;|\bbecause\b)")


def refused(model: Ranker, text: str) -> bool:
    """Whether the line asks for what only a prohibited tool does, judged on the whole line and
    on its request alone, before the reason it gives ("I want my money back for RD1001, the
    driver was late": the reason's words must not drown the request)."""
    if model.decide(text).refused:
        return True
    ask = _FIRST_CLAUSE.match(text)
    return ask is not None and bool(model.decide(ask.group("ask")).refused)
