"""``GET /v1/units?session_id=`` (docs/grounding.md): every spoken unit a session planned, in order,
with its evidence and disposition.

Same bearer-token and role rules as :mod:`vocero.app.http.operator_api` (``admin``, ``security`` or
``business_owner``). Evidence is ``{source_id, version}`` or ``{tool_call_id}``: source passages
are never part of it. A missing ``session_id`` answers 400 with ``{"error": {"code", "field",
"reason"}}``; an unknown session 404.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from vocero.app.http.operator_api import READERS, guarded, json, problem, visible_session
from vocero.app.http.operators import Operator
from vocero.app.runtime import Runtime
from vocero.store.units import UnitRepository


async def list_units(request: Request, runtime: Runtime, operator: Operator) -> Response:
    session_id = request.query_params.get("session_id", "").strip()
    if not session_id:
        return json(
            {"error": {"code": "invalid_query", "field": "session_id", "reason": "required"}},
            status=400,
        )
    if not await visible_session(runtime, operator, session_id):
        return problem(404, "session_not_found")
    units = await UnitRepository(runtime.store).units(session_id)
    return json({"items": [unit.public() for unit in units]})


def routes() -> list[Route]:
    return [Route("/v1/units", guarded(READERS, list_units), methods=["GET"])]
