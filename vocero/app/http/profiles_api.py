"""Operator API of versioned profiles and catalogs (docs/operators.md "Profiles";
ADR-0023).

``GET /v1/profiles``: every profile with the revision new sessions get. ``GET
/v1/profiles/{profile_id}/versions``: its revisions, oldest first, the active one marked.
``POST /v1/profiles/{profile_id}/rollback`` {``version``, ``reason``}: roll back, audited as
``profile.rolled_back`` with the operator as actor; ``admin`` and ``business_owner`` only (the
owners of what the agent says), ``security`` reads.
"""

from __future__ import annotations

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from vocero.app.adapters import profile_versions as pv
from vocero.app.http.bodies import BodyError, decode, from_error, rejected
from vocero.app.http.operator_api import READERS, guarded, json, problem
from vocero.app.http.operators import Operator
from vocero.app.runtime import Runtime

ROLLERS = frozenset({"admin", "business_owner"})


class RollbackBody(msgspec.Struct, forbid_unknown_fields=True):
    version: str
    reason: str = ""


async def list_profiles(request: Request, runtime: Runtime, _: Operator) -> Response:
    await runtime.profiles.refresh()
    return json({"items": await pv.listing(runtime.store)})


async def profile_versions(request: Request, runtime: Runtime, _: Operator) -> Response:
    items = await pv.history(runtime.store, request.path_params["profile_id"])
    if items is None:
        return problem(404, "profile_not_found")
    return json({"items": items})


async def rollback(request: Request, runtime: Runtime, operator: Operator) -> Response:
    try:
        body = decode(await request.body(), RollbackBody)
    except BodyError as bad:
        return from_error(bad)
    if not body.version.strip() or len(body.reason) > 500:
        field = "version" if not body.version.strip() else "reason"
        return rejected("invalid_request", field, "empty" if field == "version" else "too_long")
    profile_id = request.path_params["profile_id"]
    try:
        done = await pv.rollback(runtime.store, profile_id, body.version, actor=operator.name,
                                 via="api", reason=body.reason)
    except pv.RollbackError as bad:
        if bad.field == "profile_id":
            return problem(404, "profile_not_found")
        return rejected("invalid_request", bad.field, bad.reason)
    await runtime.profiles.refresh()  # the next session of this process gets it at once
    return json(done)


def routes() -> list[Route]:
    return [
        Route("/v1/profiles", guarded(READERS, list_profiles, every_tenant=True),
              methods=["GET"]),
        Route("/v1/profiles/{profile_id}/versions",
              guarded(READERS, profile_versions, every_tenant=True), methods=["GET"]),
        Route("/v1/profiles/{profile_id}/rollback",
              guarded(ROLLERS, rollback, every_tenant=True), methods=["POST"]),
    ]
