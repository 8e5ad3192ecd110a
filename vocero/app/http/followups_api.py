"""Operator routes of the follow-up plane (docs/followups.md "Operator API"): follow-ups, their
approval, findings.

Same bearer-token and role rules as :mod:`vocero.app.http.operator_api`: reading needs ``admin``,
``security`` or ``business_owner``; releasing a held call-back (``awaiting_approval``) needs
``admin`` or ``business_owner``. A rejected body or query answers 400 with
``{"error": {"code", "field", "reason"}}``. Lists are newest first, a page at a time
(:func:`vocero.app.http.queries.page`).
"""

from __future__ import annotations

from datetime import UTC, datetime

import anyio
import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from vocero.app.http.bodies import BodyError, decode, from_error
from vocero.app.http.bodies import rejected as _rejected
from vocero.app.http.operator_api import READERS, guarded, hidden_session, json, problem
from vocero.app.http.operators import Operator
from vocero.app.http.queries import page, paged
from vocero.app.runtime import Runtime
from vocero.followups.ports import NotAwaitingApprovalError
from vocero.followups.records import STATUSES

APPROVERS = frozenset({"admin", "business_owner"})
MAX_NOTE = 500
REVIEW_WAIT_S = 5.0
"""How long ``GET /v1/findings`` waits for end-of-session reviews already queued."""


class Approval(msgspec.Struct, forbid_unknown_fields=True):
    note: str = ""


def rejected(field: str, reason: str, code: str = "invalid_body") -> Response:
    return _rejected(code, field, reason)


async def list_followups(request: Request, runtime: Runtime, operator: Operator) -> Response:
    """``?session_id=`` or ``?status=`` (both may be given); newest first, a page at a time
    (``limit``, ``cursor``; ``next`` when more remain)."""
    status = request.query_params.get("status") or None
    if status is not None and status not in STATUSES:
        return rejected("status", f"one of {', '.join(STATUSES)}", code="invalid_query")
    cursor, limit = page(request)
    if await hidden_session(request, runtime, operator):
        return problem(404, "session_not_found")
    if runtime.followups is None:
        return json({"items": []})
    found = await runtime.followups.store.list_followups(
        session_id=request.query_params.get("session_id") or None, status=status,
        cursor=cursor, limit=limit, scope=operator.scope)
    return json(paged(found, [f.public() for f in found.items]))


async def approve_followup(request: Request, runtime: Runtime, operator: Operator) -> Response:
    if runtime.followups is None:
        return problem(404, "followup_not_found")
    try:
        body = decode(await request.body(), Approval, empty=b"{}")
    except BodyError as bad:
        return from_error(bad)
    if len(body.note) > MAX_NOTE:
        return rejected("note", f"at most {MAX_NOTE} characters")
    held = await runtime.followups.store.get(request.path_params["followup_id"])
    if held is None or not operator.scope.allows(held.tenant_id):
        return problem(404, "followup_not_found")
    try:
        approved = await runtime.followups.store.approve(
            request.path_params["followup_id"], by=operator.name, note=body.note,
            now=datetime.now(UTC))
    except NotAwaitingApprovalError as exc:
        return json({"error": {"code": "not_awaiting_approval", "field": "status",
                               "reason": exc.status}}, status=409)
    if approved is None:
        return problem(404, "followup_not_found")
    return json(approved.public())


async def list_findings(request: Request, runtime: Runtime, operator: Operator) -> Response:
    """``?session_id=`` or ``?kind=``, newest first, a page at a time (``limit``, ``cursor``);
    waits for reviews already queued."""
    cursor, limit = page(request)
    if await hidden_session(request, runtime, operator):
        return problem(404, "session_not_found")
    if runtime.followups is None:
        return json({"items": []})
    with anyio.move_on_after(REVIEW_WAIT_S):
        await runtime.followups.reviews.settled()
    found = await runtime.followups.store.findings(
        session_id=request.query_params.get("session_id") or None,
        kind=request.query_params.get("kind") or None, cursor=cursor, limit=limit,
        scope=operator.scope)
    return json(paged(found, [f.public() for f in found.items]))


def routes() -> list[Route]:
    return [
        Route("/v1/followups", guarded(READERS, list_followups), methods=["GET"]),
        Route("/v1/followups/{followup_id}/approve", guarded(APPROVERS, approve_followup),
              methods=["POST"]),
        Route("/v1/findings", guarded(READERS, list_findings), methods=["GET"]),
    ]
