"""Follow-ups (call-backs): no call-back is promised without a record (docs/followups.md).

* :class:`FollowupTools` - the built-in ``followups.record`` tool, under the call-back rule
  (:mod:`.rule`: the time must come from the caller's words or a time they agreed to) with due
  times resolved in the caller's timezone (:mod:`.due`);
* :class:`FollowupQueue` - places due phone follow-ups through the profile's call tool as
  ordinary durable operations (:mod:`.queue`, docs/followups.md "The queue");
* :class:`SessionReviews` - the ``promised_unbooked`` finding at the end of a session;
* :class:`SqlFollowupStore` - the plane's store adapter.

The plane never imports the policy plane: it implements
:class:`~vocero.contracts.builtins.BuiltinTools` and calls
:class:`~vocero.contracts.system_actions.SystemActions`; the app wires both.
"""

from vocero.followups.queue import FollowupQueue, QueueSettings, TickOutcome, outcomes_json
from vocero.followups.review import PROMISED_UNBOOKED, HeardLine, SessionReviews
from vocero.followups.sql import SqlFollowupStore
from vocero.followups.tool import FOLLOWUPS, SCHEMA, FollowupTools

__all__ = [
    "FOLLOWUPS",
    "PROMISED_UNBOOKED",
    "SCHEMA",
    "FollowupQueue",
    "FollowupTools",
    "HeardLine",
    "QueueSettings",
    "SessionReviews",
    "SqlFollowupStore",
    "TickOutcome",
    "outcomes_json",
]
