"""``GET /v1/handoffs``: callers handed to a person, for the console's "Needs you"
(docs/operators.md "Handoffs").

Each item is one ``handoff.request`` operation, newest first: its session and channel, what the
handoff did (``transferred``, ``task_recorded``, ``NOT transferred``), the ``task`` follow-up a
person works from (if any), what the caller heard (the session's history as heard, its last
lines) and what is still pending in that session (questions never answered, operations not
settled). Same roles as the operator API's readers; scoped to the operator's tenants.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from vocero.app.http.operator_api import READERS, guarded, json
from vocero.app.http.operators import Operator
from vocero.app.http.queries import integer
from vocero.app.runtime import Runtime
from vocero.store.handoffs import HandoffQueries

HEARD_LINES = 20
"""The last lines of the conversation shown with a handoff."""


async def list_handoffs(request: Request, runtime: Runtime, operator: Operator) -> Response:
    limit = integer(request, "limit", default=50, low=1, high=200)
    await runtime.recorder.flush()  # the session's last words reach the store first
    items: list[dict[str, Any]] = []
    for handoff in await HandoffQueries(runtime.store).handoffs(limit, operator.scope):
        history = await runtime.conversations.history(handoff.session_id)
        items.append({
            **handoff.public(),
            "heard": [{"role": h.role, "text": h.text, "status": h.status}
                      for h in history[-HEARD_LINES:] if h.text],
        })
    return json({"items": items})


def routes() -> list[Route]:
    return [Route("/v1/handoffs", guarded(READERS, list_handoffs), methods=["GET"])]
