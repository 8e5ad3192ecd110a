"""The Starlette application: health, metrics, the realtime endpoint, the operator API, the
browser client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from vocero.app.adapters.scrape import refresh_gauges
from vocero.app.adapters.sessions import GatewayFor, SessionFactory
from vocero.app.adapters.telemetry import traces
from vocero.app.commands.purge import purging
from vocero.app.http import (
    console_api,
    followups_api,
    handoffs_api,
    operations_api,
    operator_api,
    profiles_api,
    units_api,
    voice_api,
)
from vocero.app.http.headers import SecurityHeaders
from vocero.app.http.operators import load_operators
from vocero.app.runtime import Runtime, open_runtime
from vocero.app.settings import Settings
from vocero.contracts.clock import SystemClock
from vocero.contracts.domain import Caller
from vocero.followups.carrier_call import callback_answered
from vocero.identity.identities import IdentityDirectory
from vocero.identity.profiles import ProfileCatalog
from vocero.observability.heap_trim import trimming
from vocero.relay.connection import Connection
from vocero.relay.limits import PendingConnections
from vocero.relay.origins import OriginPolicy
from vocero.relay.ports import RelayConfig
from vocero.relay.telephony import twilio, voice_webhook
from vocero.relay.telephony.config import TelephonyConfig
from vocero.relay.telephony.stream import twilio_stream
from vocero.relay.telephony.tickets import Admitted, TicketBook
from vocero.web import STATIC


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def readyz(request: Request) -> Response:
    runtime: Runtime = request.app.state.runtime
    runners = runtime.shared_runners.statuses()
    statuses = {name: s.health for name, s in runners.items()}
    ready = runtime.ready.is_set() and not request.app.state.relay.draining
    body: dict[str, object] = {"ready": ready, "runners": statuses}
    remote = runtime.shared_runners.remote_stages()
    if remote:  # each serving engine, by stage: its URL and model, health, last failure
        body["endpoints"] = {
            stage: {"health": runners[stage].health, "detail": runners[stage].detail}
            for stage in remote
        }
    return JSONResponse(body, status_code=200 if ready else 503)


async def metrics(request: Request) -> Response:
    runtime: Runtime = request.app.state.runtime
    await refresh_gauges(runtime.metrics, runtime.shared_runners, runtime.store)
    body, content_type = runtime.metrics.render()
    return Response(body, media_type=content_type)


async def index(request: Request) -> Response:
    return FileResponse(STATIC / "index.html")


async def realtime(websocket: WebSocket) -> None:
    await Connection(websocket, websocket.app.state.relay).serve()


def create_app(
    settings: Settings, config: tuple[IdentityDirectory, ProfileCatalog] | None = None, *,
    gateway_for: GatewayFor | None = None,
) -> Starlette:
    """The application ``serve`` runs. ``gateway_for`` replaces the sessions' MCP gateways
    (:func:`vocero.app.runtime.no_gateway`: every MCP tool is denied, as when no gateway is
    reachable)."""
    operators = load_operators(
        settings.operators, settings.operator_token, jwks=settings.operator_jwks,
        issuer=settings.operator_issuer, audience=settings.operator_audience)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with (
            traces(settings.otlp_endpoint),
            open_runtime(settings, config, gateway_for=gateway_for) as runtime,
            purging(runtime.store, settings.retention, settings.purge_every_s, SystemClock()),
            trimming(settings.heap_trim_s, SystemClock(), runtime.metrics.heap_trimmed_bytes.inc),
        ):
            app.state.runtime = runtime
            app.state.operators = operators
            app.state.relay = RelayConfig(
                authenticate=runtime.authenticate,
                select_profile=runtime.profiles.select_fresh,
                factory=SessionFactory(runtime),
                metrics=runtime.port,
                max_sessions=settings.max_sessions,
                monotonic=runtime.monotonic,
                wait_ready=runtime.wait_ready,
                origins=OriginPolicy.parse(
                    settings.allowed_origins, host=settings.host, port=settings.port
                ),
                pending=PendingConnections(settings.max_pending_per_address),
            )
            app.state.telephony = telephony_config(settings, runtime, app.state.relay)
            yield
            app.state.relay.draining = True

    routes = [
        Route("/", index),
        Route("/healthz", healthz),
        Route("/readyz", readyz),
        Route("/metrics", metrics),
        WebSocketRoute("/v1/realtime", realtime),
        Route(twilio.VOICE_PATH, voice_webhook.voice, methods=["POST"]),
        WebSocketRoute(twilio.STREAM_PATH, twilio_stream),
        *operator_api.routes(),
        *operations_api.routes(),
        *handoffs_api.routes(),
        *units_api.routes(),
        *profiles_api.routes(),
        *followups_api.routes(),
        *voice_api.routes(),
        *console_api.routes(),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    middleware = [Middleware(SecurityHeaders)]
    if settings.forwarded_allow_ips:  # only these proxies' X-Forwarded-For/-Proto are believed
        middleware.insert(0, Middleware(
            ProxyHeadersMiddleware, trusted_hosts=trusted_proxies(settings.forwarded_allow_ips)))
    return Starlette(routes=routes, lifespan=lifespan, middleware=middleware)


def telephony_config(
    settings: Settings, runtime: Runtime, relay: RelayConfig
) -> TelephonyConfig | None:
    """The phone leg (docs/telephony.md), only with ``--twilio-auth-token``: without it both
    telephony routes answer 404. Callers are found by phone number in the identities."""
    if not settings.twilio_auth_token:
        return None
    public_url = settings.public_url or f"{settings.scheme}://{settings.host}:{settings.port}"

    async def caller_by_phone(number: str) -> Caller | None:
        return runtime.identities.by_phone(number)

    async def callback_of(followup_id: str, number: str) -> Admitted | None:
        found = await callback_answered(runtime.followups.store, runtime.identities,
                                        runtime.profiles.get, followup_id, number)
        if found is None:
            return None
        caller, opening = found
        return Admitted(caller, followup_id=followup_id, opening=opening)

    return TelephonyConfig(
        relay=relay,
        auth_token=settings.twilio_auth_token,
        public_url=public_url,
        caller_by_phone=caller_by_phone,
        tickets=TicketBook(runtime.monotonic),
        accounts=runtime.call_accounts,
        callback_of=callback_of,
    )


def trusted_proxies(text: str) -> list[str]:
    """``--forwarded-allow-ips``: comma-separated addresses or networks, or ``*``."""
    return [part.strip() for part in text.split(",") if part.strip()]
