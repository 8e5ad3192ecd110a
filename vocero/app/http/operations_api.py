"""Operator routes for operations nobody could reconcile (docs/operators.md "Operations nobody
could reconcile"): the list the console's "Needs you" shows, and an operator's resolution.

Same bearer-token and role rules as :mod:`vocero.app.http.operator_api`: reading needs
``admin``, ``security`` or ``business_owner``; resolving needs ``admin`` or ``business_owner``
(the roles that release held follow-ups). A rejected body answers 400 with
``{"error": {"code", "field", "reason"}}``.

* ``GET /v1/operations/unresolved``: ``unknown`` operations, oldest first, each with what the
  caller heard (the session's history as heard, the read-back and whether it was heard in full).
* ``POST /v1/operations/{operation_id}/resolution`` body {``outcome``: ``committed`` |
  ``failed``, ``note``}: 200 with the operation and the ``task`` follow-up that asks a person to
  tell the caller; 404 for an unknown id; 409 ``not_unknown`` when it is not ``unknown``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from vocero.app.http.bodies import BodyError, decode, from_error, rejected
from vocero.app.http.operator_api import READERS, guarded, json, problem
from vocero.app.http.operators import Operator
from vocero.app.http.queries import integer
from vocero.app.runtime import Runtime
from vocero.policy.resolution import NotUnknownError, Resolutions

RESOLVERS = frozenset({"admin", "business_owner"})
MAX_NOTE = 1000
HEARD_LINES = 20
"""The last lines of the conversation shown with an unresolved operation."""


class Resolution(msgspec.Struct, forbid_unknown_fields=True):
    outcome: Literal["committed", "failed"]
    note: Annotated[str, msgspec.Meta(max_length=MAX_NOTE)]


def _resolutions(runtime: Runtime) -> Resolutions | None:
    return Resolutions(runtime.actions.repo) if runtime.actions is not None else None


async def list_unresolved(request: Request, runtime: Runtime, operator: Operator) -> Response:
    limit = integer(request, "limit", default=100, low=1, high=500)
    resolutions = _resolutions(runtime)
    if resolutions is None:
        return json({"items": []})
    await runtime.recorder.flush()
    items: list[dict[str, Any]] = []
    for op in await resolutions.unresolved(limit, operator.scope):
        history = await runtime.conversations.history(op.session_id)
        items.append({
            **op.public(), "session_id": op.session_id,
            "readback": await resolutions.readback(op),
            "heard": [{"role": h.role, "text": h.text, "status": h.status}
                      for h in history[-HEARD_LINES:] if h.text],
        })
    return json({"items": items})


async def resolve(request: Request, runtime: Runtime, operator: Operator) -> Response:
    try:
        body = decode(await request.body(), Resolution)
    except BodyError as bad:
        return from_error(bad)
    note = body.note.strip()
    if not note:
        return rejected("invalid_body", "note", "required: what the operator checked")
    resolutions = _resolutions(runtime)
    if resolutions is None or runtime.actions is None:
        return problem(404, "operation_not_found")
    held = await runtime.actions.repo.get(request.path_params["operation_id"])
    if held is None or not operator.scope.allows(held.tenant_id):
        return problem(404, "operation_not_found")  # another tenant's: as if it did not exist
    try:
        done = await resolutions.resolve(
            request.path_params["operation_id"], body.outcome, note=note, operator=operator.name)
    except LookupError:
        return problem(404, "operation_not_found")
    except NotUnknownError as exc:
        return rejected("not_unknown", "status", f"the operation is {exc.status}", status=409)
    return json({**done.operation.public(), "session_id": done.operation.session_id,
                 "followup_id": done.followup_id})


def routes() -> list[Route]:
    return [
        Route("/v1/operations/unresolved", guarded(READERS, list_unresolved), methods=["GET"]),
        Route("/v1/operations/{operation_id}/resolution", guarded(RESOLVERS, resolve),
              methods=["POST"]),
    ]
