"""Operator HTTP API (docs/operators.md). Every ``/v1`` route needs a bearer token; roles gate
routes. The one route outside ``/v1``, the OAuth callback, is bound by its pending ``state``
instead."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from vocero.app.http.bodies import BodyError, decode, from_error, rejected
from vocero.app.http.operators import Operator, OperatorDirectory
from vocero.app.http.queries import QueryError, integer, page, paged
from vocero.app.runtime import Runtime
from vocero.mcp_gateway import CALLBACK_PARAMETERS, callback_problem

Handler = Callable[[Request, Runtime, Operator], Awaitable[Response]]

READERS = frozenset({"admin", "security", "business_owner"})


def json(data: Any, status: int = 200) -> Response:
    return Response(msgspec.json.encode(data), status_code=status, media_type="application/json")


def problem(status: int, code: str) -> JSONResponse:
    return JSONResponse({"error": code}, status_code=status)


def guarded(
    roles: frozenset[str], handler: Handler, *, every_tenant: bool = False
) -> Callable[[Request], Awaitable[Response]]:
    """``handler`` for an authenticated operator holding one of ``roles`` (and seeing every
    tenant, with ``every_tenant``: a route on what all tenants share, such as pinned tools);
    a query parameter it refuses (:class:`~vocero.app.http.queries.QueryError`) answers 400
    ``invalid_query``. The handler narrows what it reads to ``operator.scope``."""

    async def endpoint(request: Request) -> Response:
        operators: OperatorDirectory = request.app.state.operators
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        operator = await operators.identify(token.strip()) if scheme.lower() == "bearer" else None
        if operator is None:
            return problem(401, "unauthenticated")
        if not roles.intersection(operator.roles):
            return problem(403, "forbidden")
        if every_tenant and not operator.scope.everywhere:
            return problem(403, "every_tenant_required")
        try:
            return await handler(request, request.app.state.runtime, operator)
        except QueryError as bad:
            return rejected("invalid_query", bad.field, bad.reason)

    return endpoint


async def visible_session(runtime: Runtime, operator: Operator, session_id: str) -> bool:
    """Whether ``session_id`` is a session of one of the operator's tenants (an operator of
    every tenant: whether it exists)."""
    await runtime.recorder.flush()
    record = await runtime.conversations.get_session(session_id)
    return record is not None and operator.scope.allows(record.tenant_id)


async def hidden_session(request: Request, runtime: Runtime, operator: Operator) -> bool:
    """Whether the request's ``?session_id=`` names a session the operator may not see: one of
    another tenant, or none at all, for an operator scoped to some tenants (a 404 either way, so
    another tenant's session ids cannot be told from unknown ones)."""
    session_id = request.query_params.get("session_id") or ""
    if not session_id or operator.scope.everywhere:
        return False
    return not await visible_session(runtime, operator, session_id)


async def get_session(request: Request, runtime: Runtime, operator: Operator) -> Response:
    session_id = request.path_params["session_id"]
    await runtime.recorder.flush()
    record = await runtime.conversations.get_session(session_id)
    if record is None or not operator.scope.allows(record.tenant_id):
        return problem(404, "session_not_found")
    live = runtime.live.get(session_id)
    history = await runtime.conversations.history(session_id)
    return json(
        {
            "session_id": record.id,
            "state": live.state_name if live else record.state,
            "identity": {"subject_ref": record.subject_ref, "tenant_id": record.tenant_id},
            "effective": live.ctx.effective if live else record.effective,
            "profile": {"id": record.profile_id, "version": record.profile_version},
            "created_at": record.created_at,
            "closed_at": record.closed_at,
            "channel": record.channel,
            **({"call_sid": record.call_sid} if record.call_sid else {}),
            **({"followup_id": record.followup_id} if record.followup_id else {}),
            "history": [
                {
                    "role": h.role,
                    "text": h.text,
                    "generation_id": h.generation_id,
                    "status": h.status,
                }
                for h in history
            ],
        }
    )


AUDIT_PAGE = 500
"""``GET /v1/audit`` returns at most this many events unless ``limit`` says fewer."""
AUDIT_PAGE_MAX = 5000


async def get_audit(request: Request, runtime: Runtime, operator: Operator) -> Response:
    """Audit events in ``seq`` order, a page at a time (``after_seq``, ``limit``); each item
    carries everything its hash covers (docs/security.md shows how to verify the chain).
    ``chain`` says whether the whole chain verifies: walked on from the last good walk, in full
    at least once a minute, or now with ``verify=full``."""
    session_id = request.query_params.get("session_id") or None
    after_seq = integer(request, "after_seq", default=0, low=0, high=2**63 - 1)
    limit = integer(request, "limit", default=AUDIT_PAGE, low=1, high=AUDIT_PAGE_MAX)
    walk = request.query_params.get("verify", "")
    if walk not in ("", "full"):
        return rejected("invalid_query", "verify", "must be full when given")
    if await hidden_session(request, runtime, operator):
        return problem(404, "session_not_found")
    await runtime.audits_settled()
    events = await runtime.audit.events(session_id=session_id, after_seq=after_seq,
                                        limit=limit + 1, scope=operator.scope)
    page = events[:limit]
    verification = await runtime.audit.verify(full=walk == "full")
    body: dict[str, Any] = {
        "items": [
            {
                "chain": e.chain,
                "seq": e.seq,
                "kind": e.kind,
                "session_id": e.session_id,
                "actor": e.actor,
                "at": e.at,
                "data": e.data,
                "prev_hash": e.prev_hash,
                "hash": e.hash,
            }
            for e in page
        ],
        "chain": {
            "ok": verification.ok,
            "count": verification.count,
            "broken_at_seq": verification.broken_at_seq,
        },
    }
    if len(events) > limit:
        body["next_after_seq"] = page[-1].seq
    if not operator.scope.everywhere:
        body["scoped"] = True  # other tenants' events (and those of no session) left out
    return json(body)


async def get_operations(request: Request, runtime: Runtime, operator: Operator) -> Response:
    """Durable operations (of one session with ``session_id``) with their status,
    attempts and receipt, newest first, a page at a time (``limit``, ``cursor``; ``next`` when
    more remain)."""
    session_id = request.query_params.get("session_id") or None
    cursor, limit = page(request)
    if await hidden_session(request, runtime, operator):
        return problem(404, "session_not_found")
    if runtime.actions is None:
        return json({"items": []})
    found = await runtime.actions.operations_page(session_id, cursor=cursor, limit=limit,
                                                  scope=operator.scope)
    return json(paged(found, [op.public() for op in found.items]))


def routes() -> list[Route]:
    return [
        Route("/v1/sessions/{session_id}", guarded(READERS, get_session), methods=["GET"]),
        Route("/v1/audit", guarded(READERS, get_audit), methods=["GET"]),
        Route("/v1/operations", guarded(READERS, get_operations), methods=["GET"]),
        *tool_routes(),
    ]


TOOL_REVIEWERS = frozenset({"admin", "security"})


class ToolApproval(msgspec.Struct, forbid_unknown_fields=True):
    definition_hash: Annotated[str, msgspec.Meta(min_length=1, max_length=128)]


def _pin_view(pin: Any) -> dict[str, Any]:
    return {
        "server": pin.server,
        "tool": pin.tool,
        "status": pin.status,
        # the approved definition's hash: a first-seen tool awaiting review has none yet
        "definition_hash": "" if pin.status == "pending" else pin.definition_hash,
        "observed_hash": pin.observed_hash,
        "approved_by": pin.approved_by,
    }


async def list_tools(request: Request, runtime: Runtime, _: Operator) -> Response:
    """Pinned MCP tool definitions; a ``pending`` (first seen under review) or ``changed`` one
    awaits an operator's approval of its ``observed_hash``."""
    pins = runtime.connections.pins() if runtime.connections is not None else []
    return json({"items": [_pin_view(p) for p in pins]})


async def approve_tool(request: Request, runtime: Runtime, operator: Operator) -> Response:
    """Re-approve a changed tool definition by the hash the server now lists."""
    if runtime.connections is None:
        return problem(404, "tool_not_found")
    try:
        body = decode(await request.body(), ToolApproval)
    except BodyError as bad:
        return from_error(bad)
    server, tool = request.path_params["server"], request.path_params["tool"]
    if runtime.connections.connection(server) is None:
        return problem(404, "tool_not_found")
    try:
        pin = await runtime.connections.approve_tool(
            server, tool, body.definition_hash, approved_by=operator.name
        )
    except LookupError:
        return problem(409, "no_pending_definition")
    except ValueError:
        return problem(409, "definition_refused")
    return json(_pin_view(pin))


async def list_authorizations(request: Request, runtime: Runtime, _: Operator) -> Response:
    """MCP servers waiting for an operator to authorize the gateway (the authorization-code
    grant): open ``authorization_url`` in a browser; one per waiting node, any one will do."""
    pending = await runtime.consents.pending() if runtime.consents is not None else []
    return json(
        {
            "items": [
                {
                    "id": c.id,
                    "server": c.server,
                    "node_id": c.node_id,
                    "authorization_url": c.authorization_url,
                    "created_at": c.created_at,
                    "expires_at": c.expires_at,
                }
                for c in pending
            ]
        }
    )


CALLBACK_PATH = "/oauth/mcp/callback"
"""Where an authorization server sends the operator's browser back (the profile's
``oauth.redirect_uri``). No bearer token comes with a redirect: the pending ``state`` is the
binding, found once, unexpired."""


CONSENT_OUTCOME_WAIT_S = 10.0
"""How long the callback's page waits to say how the token exchange went (this node's flow);
after that, or on another node, it says the answer is being checked."""


async def oauth_callback(request: Request) -> Response:
    """Unauthenticated, so checked first: each parameter's characters and length (400
    ``invalid_query``), then the state, read only (400 ``unknown_consent``). The page says
    what happened to the answer, never more: authorized only once tokens are stored."""
    runtime: Runtime = request.app.state.runtime
    given = {name: request.query_params.getlist(name) for name in CALLBACK_PARAMETERS}
    if (bad := callback_problem(given)) is not None:
        return rejected("invalid_query", *bad)
    query = {name: values[0] for name, values in given.items() if values}
    operator = runtime.consents
    found = await operator.answer(query) if operator is not None else None
    if operator is None or found is None:
        return rejected("unknown_consent", "state", "no pending authorization has this state")
    status, reason = await operator.outcome(found, CONSENT_OUTCOME_WAIT_S)
    text = _outcome_text(found.server, status, reason)
    return PlainTextResponse(text, headers={"cache-control": "no-store"})


def _outcome_text(server: str, status: str, reason: str) -> str:
    if status == "granted":
        return f"Vocero is now authorized to use {server}. You can close this window."
    if status == "refused":
        return f"The authorization of {server} was refused: Vocero is not authorized to use it."
    if status == "failed":
        return (
            f"The authorization server did not accept this answer ({reason}): Vocero is not "
            f"authorized to use {server}. It asks again; see Needs you in the operator console."
        )
    return (
        f"Vocero received the answer for {server} and is checking it with the authorization "
        "server; the operator console shows whether it was authorized. You can close this window."
    )


def tool_routes() -> list[Route]:
    return [
        Route("/v1/tools", guarded(TOOL_REVIEWERS, list_tools, every_tenant=True),
              methods=["GET"]),
        Route(
            "/v1/tools/{server}/{tool}/approvals",
            guarded(TOOL_REVIEWERS, approve_tool, every_tenant=True),
            methods=["POST"],
        ),
        Route(
            "/v1/mcp/authorizations",
            guarded(TOOL_REVIEWERS, list_authorizations, every_tenant=True),
            methods=["GET"],
        ),
        Route(CALLBACK_PATH, oauth_callback, methods=["GET"]),
    ]
