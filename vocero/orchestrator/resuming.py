"""What a resumed session says first about what the lost connection may have carried
(docs/protocol.md "Session lifecycle", issue 46 item 2).

A caller's "yes" that meets a cut connection may or may not have reached the server, and the
client cannot tell which from the wire. So a resumed session tells it, before any new turn:

* the current ``tool.status.v1`` of each of the session's recent writes (an answer that reached
  the server and was acted on shows up here, by its ``proposal_id``, exactly once executed);
* the confirmation question that was asked and never acted on (the answer was lost, or never
  sent): ``tool.confirmation_required.v1`` again, same proposal and revision, and its read-back
  spoken anew; a "yes" binds once that read-back was heard, as before the cut.
"""

from __future__ import annotations

from dataclasses import dataclass

from vocero.contracts import events as ev
from vocero.contracts.actions import ToolPlan

RESUMED_LEAD = "We got cut off."
"""Said before a question asked again on a resumed session."""


@dataclass(frozen=True, slots=True)
class Resumed:
    """What a resumed session's previous connection left to say (see the module docstring)."""

    statuses: tuple[ev.ToolStatusChanged, ...] = ()
    question: ToolPlan | None = None
