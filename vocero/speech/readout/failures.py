"""A call that gave no answer, said in words the caller can act on, and a recorded follow-up said
as the promise its record backs."""

from __future__ import annotations

import re

from vocero.contracts.domain import ToolSpec
from vocero.speech.model import ToolEvidence
from vocero.speech.readout.context import Readout, ReadoutContext, TemplateError
from vocero.speech.readout.records import used_identifier
from vocero.speech.readout.spoken import moment_words
from vocero.speech.readout.templates import fill
from vocero.speech.readout.words import is_identifier, key_words, noun_of, sentence

_ERROR_CODE = re.compile(r"^\s*([a-z][a-z0-9_]+)\b")


NO_ANSWER = {
    "input_timeout": "I didn't get an answer to my question in time, so I stopped there.",
    "input_not_completed": "I didn't hear back that the page was finished, so I stopped there.",
}
"""A server's question that got no answer in time (the caller's, or the server's word that its
page was done): the call ended without doing anything."""


WRITE_FAILURES = {
    "stale_version": "That changed in the meantime, so I didn't make the change. "
    "Shall I check it again?",
    "already_cancelled": "That appointment was already cancelled.",
    "caller_limit": "You already have as many call-backs waiting as we can book, so no more "
    "can be booked until one of them is done. Nothing was booked.",
    "session_limit": "No more follow-ups can be booked in this call. Nothing was booked.",
}


STEP_REFUSALS = frozenset({"disclosure_not_heard", "identity_not_verified"})
"""A write the action gate refused for a required step (docs/adr/0030-required-steps.md): the
gate's own explanation, which the write's result carries as ``summary``, is said."""


def failure(call: ToolEvidence, spec: ToolSpec | None, ctx: ReadoutContext) -> str:
    """Why a call did not give an answer, in words the caller can act on."""
    reason = _error_code(call)
    writes = spec is not None and spec.action_class != "read"
    summary = (call.result or {}).get("summary")
    if writes and reason in STEP_REFUSALS and isinstance(summary, str) and summary.strip():
        return summary.strip()
    if call.status == "unknown":
        if writes:
            return "Sorry, I could not confirm whether that went through. Please check again later."
        return "I couldn't get an answer just now. Please try again in a moment."
    if reason in NO_ANSWER:
        return NO_ANSWER[reason] + (" Nothing was changed." if writes else "")
    if writes and reason in WRITE_FAILURES:
        return WRITE_FAILURES[reason]
    named = used_identifier(call, ctx)
    if named and (reason == "not_found" or (not writes and reason in ("refused", ""))):
        noun = _thing(call, named)
        return (
            f"I couldn't find {noun} {named} on your account — could you check the "
            f"{'number' if any(c.isdigit() for c in named) else 'name'}?"
        )
    if reason == "not_found":
        return f"I couldn't find that {_thing(call)} on your account."
    return "Sorry, I could not complete that."


def _thing(call: ToolEvidence, named: str = "") -> str:
    """What the caller's identifier names, from the field it went in (``hire_ref`` -> "hire",
    ``order_no`` -> "order"), else what the tool is about (:func:`noun_of`): never another
    word of the tool's name ("depot.hire_card" looks up a hire, not a depot)."""
    for key, value in call.arguments.items():
        if isinstance(value, str) and is_identifier(key) and (value == named or not named):
            noun = " ".join(key_words(key)[:-1])
            if noun:
                return noun
    return noun_of(call.tool)


def _error_code(call: ToolEvidence) -> str:
    error = (call.result or {}).get("error")
    if isinstance(error, str):
        found = _ERROR_CODE.match(error)
        if found and found[1] not in ("refused", "error"):
            return found[1]
    return call.reason_code or (error if isinstance(error, str) else "")


def followup(spec: ToolSpec | None, call: ToolEvidence, ctx: ReadoutContext) -> Readout:
    """A recorded follow-up is a promise backed by its record (what the store answered: the
    write's receipt); an unrecorded one never is."""
    result = dict(call.answer)
    if not result.get("followup_id") or result.get("recorded") is False:
        return Readout("I haven't booked a call back yet.", "fallback")
    due = result.get("due_at")
    when = moment_words(due, ctx) if isinstance(due, str) else "later"
    if result.get("channel") == "task":
        return Readout(f"I've passed that on to the team, due {when}.", "promise")
    if result.get("duplicate"):
        return Readout(f"You already have a call back booked for {when}.", "promise")
    if spec is not None and spec.readout:
        try:
            return Readout(sentence(fill(spec.readout, [result, call.arguments], ctx)), "promise")
        except TemplateError:
            pass
    return Readout(f"I've booked a call back for {when}.", "promise")
