"""Read-outs: a tool result said the way a person would say it (docs/grounding.md "Read-outs").

With the profile's ``readout`` template, ``{field}`` placeholders (dotted paths allowed) take
the result's fields; for a list result the template words one item and a count leads ("You have
two appointments: a boiler inspection on Thursday, December 3 at 10 AM, and ..."). Without a
template a generic read-out is built in sentences from the result's own fields, whatever they
are named: the status leads ("Parcel B52 is packed."), then dates and times in words ("It is
expected on Friday, December 4.", "It starts tomorrow, December 2 at 4 PM."), then the other
fields as short clauses ("It is paid.", "It has three items.", "Its quantity is two."), within
the profile's word budget. Keys are never spoken as they are written, and internal fields never
(versions, raw timezone names, operation ids, tokens, links, tenants, identifiers the caller did
not use). A server's free text is data: a message is read only when it is all the result says,
quoted, short and nothing like an instruction; any text field over ``FREE_TEXT_WORDS`` words is
not read. List items follow the same rules. Dates are relative where that helps
("tomorrow, December 2", in the caller's timezone at the ``now`` given); a time of a record kept
in another timezone names its city. A failure is said in words the caller can act on ("I
couldn't find order B52 on your account — could you check the number?").

Read-outs are application wording built from the result itself, so they are ``tool_fact``
units (``outcome`` for a write's receipt, ``promise`` for a recorded follow-up, ``fallback`` for
a failure) without a second grounding check.

One module a concern: :mod:`.context` (the caller's clock, zone, locale and words; the result),
:mod:`.templates` (a profile's template filled), :mod:`.records` (the generic read-out of a record
or a list), :mod:`.whens` and :mod:`.clauses` (one sentence a date or time, one a field),
:mod:`.spoken` (one value in words), :mod:`.words` (what a key's words say, and English word
forms), :mod:`.failures` (failures and recorded follow-ups).
"""

from __future__ import annotations

from vocero.contracts.builtins import FOLLOWUPS_TOOL as FOLLOWUPS
from vocero.contracts.domain import ToolSpec
from vocero.speech.model import ToolEvidence, UnitKind
from vocero.speech.readout.context import Readout, ReadoutContext, TemplateError
from vocero.speech.readout.failures import failure, followup
from vocero.speech.readout.records import generic
from vocero.speech.readout.templates import templated


def read_out(spec: ToolSpec | None, call: ToolEvidence, ctx: ReadoutContext) -> Readout:
    """How ``call``'s result is said."""
    if not call.ok:
        return Readout(failure(call, spec, ctx), "fallback")
    result = dict(call.result or {})
    if call.went_to(FOLLOWUPS):
        return followup(spec, call, ctx)
    writes = spec is not None and spec.action_class != "read"
    record = call.answer
    kind: UnitKind = "outcome" if writes else "tool_fact"
    template = spec.readout if spec is not None else ""
    if template:
        try:
            return Readout(templated(template, record, call, ctx), kind)
        except TemplateError:
            pass
    if writes and isinstance(result.get("summary"), str) and result["summary"].strip():
        return Readout(result["summary"].strip(), kind)
    return Readout(generic(call, record, ctx, writes), kind)


__all__ = ["Readout", "ReadoutContext", "TemplateError", "failure", "read_out"]
