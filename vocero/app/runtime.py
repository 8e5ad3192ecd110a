"""Everything a running server holds, opened and closed in one place."""

from __future__ import annotations

import dataclasses
import gc
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import structlog

from vocero.app.adapters.callbacks import carrier_call_tools
from vocero.app.adapters.endpoint_metrics import EndpointCollector
from vocero.app.adapters.followups import (
    FollowupServices,
    builtin_tools,
    followup_services,
    run_ticks,
)
from vocero.app.adapters.handoff import handoff_services
from vocero.app.adapters.profile_registry import ProfileRegistry
from vocero.app.adapters.recorder import StoreRecorder
from vocero.app.adapters.recovery import recover_interrupted_sessions
from vocero.app.adapters.sessions import GatewayFor
from vocero.app.adapters.telemetry import MetricsPort
from vocero.app.settings import Settings, db_url, endpoint_keys
from vocero.contracts.builtins import BuiltinSet
from vocero.contracts.clock import SystemClock
from vocero.contracts.domain import AgentProfile, Caller
from vocero.contracts.errors import ConfigError, ErrorCode
from vocero.contracts.ports import ToolGateway
from vocero.identity.caller_jwt import (
    CallerJwtSettings,
    CallerJwtVerifier,
    ClaimNames,
    expires_at,
    looks_like_jwt,
)
from vocero.identity.identities import IdentityDirectory, load_identities
from vocero.identity.jwks import KeySource
from vocero.identity.profiles import ProfileCatalog, load_profiles
from vocero.inference.remote import Endpoint, with_endpoints
from vocero.inference.runner_set import RunnerSet
from vocero.inference.sim import SimScript, build_sim_runners, load_script
from vocero.mcp_gateway import (
    AuthOptions,
    CallerCredentials,
    GatewaySettings,
    McpConnections,
    McpGateway,
    OperatorConsent,
    record_safely,
)
from vocero.mcp_gateway.oauth_store import SqlConsentRepository, SqlOAuthTokenRepository
from vocero.mcp_gateway.pin_store import SqlPinRepository
from vocero.observability.metrics import Metrics
from vocero.orchestrator.session import Session
from vocero.policy import ActionPlane, ExecutorSettings
from vocero.relay.telephony.redirect import AccountBook
from vocero.speech.forms import warm_locale
from vocero.speech.knowledge import KnowledgeTools
from vocero.store.audit import AuditLog
from vocero.store.engine import Store, async_url, sqlite_file
from vocero.store.leases import LeaseSettings, NodeLease
from vocero.store.migrate import upgrade_async
from vocero.store.profiles import ProfileVersions
from vocero.store.record_ops import RecordOps
from vocero.store.repositories import Conversations
from vocero.voice_vault import VaultCipher, VoiceVault, load_key

log = structlog.get_logger("vocero.runtime")

def no_gateway(profile: AgentProfile, caller: Caller | None) -> ToolGateway | None:
    return None


@dataclass
class StoreOutage:
    """A store outage as this process lives through it (see ``_store_lost``)."""

    down: bool = False
    """The last renewal did not reach the store."""
    told: dict[str, bool] = field(default_factory=dict)
    """The live sessions told of the outage, each with whether it has taken it yet (gone
    ``DEGRADED``, or was already; a busy one takes it at a later failed renewal)."""


@dataclass(frozen=True)
class Runtime:
    """Everything a running server holds, built once by :func:`open_runtime` and never
    reassigned. What changes while it runs lives in the objects it holds: the live sessions, the
    store outage, readiness."""

    settings: Settings
    identities: IdentityDirectory
    profiles: ProfileRegistry
    """The head revision of every profile (vocero/app/adapters/profile_registry.py)."""
    store: Store
    audit: AuditLog
    conversations: Conversations
    recorder: StoreRecorder
    metrics: Metrics
    port: MetricsPort
    runners_for_session: Callable[[], RunnerSet]
    shared_runners: RunnerSet
    node: NodeLease
    """This process's lease on the store: what it holds (sessions, outbox rows) and renews."""
    connections: McpConnections
    consents: OperatorConsent
    """The MCP authorizations waiting for an operator (docs/mcp.md "OAuth")."""
    gateway_for: GatewayFor
    actions: ActionPlane
    builtins: BuiltinSet
    """Vocero's own tools (``server: vocero``), one provider per plane that implements them."""
    followups: FollowupServices
    vault: VoiceVault
    monotonic: Callable[[], float] = time.monotonic
    outage: StoreOutage = field(default_factory=StoreOutage)
    live: dict[str, Session] = field(default_factory=dict)
    released: dict[str, anyio.Event] = field(default_factory=dict)
    """Set once a live session's connection has let go of it (see ``SessionFactory``)."""
    ready: anyio.Event = field(default_factory=anyio.Event)
    caller_jwt: CallerJwtVerifier | None = None
    """Caller JWTs from the identity provider (``--caller-jwks``); ``None``: identities only."""
    credentials: CallerCredentials = field(default_factory=CallerCredentials)
    """The JWTs callers connected with, exchanged for delegated servers (docs/adr/0027)."""
    call_accounts: AccountBook | None = None
    """Each phone call's ``AccountSid``, noted by the Voice webhook for a handoff's transfer."""

    async def wait_ready(self, timeout_s: float = 30.0) -> bool:
        """Whether a new session may be admitted: warm, and the recorder not so far behind
        that the records it must keep would pile up (back-pressure: refused
        ``CAPACITY_EXHAUSTED`` until it catches up)."""
        with anyio.move_on_after(timeout_s):
            await self.ready.wait()
        return self.ready.is_set() and not self.recorder.backlogged

    async def authenticate(self, token: str) -> Caller | None:
        """The caller of a ``session.connect.v1`` token: a JWT verified against the identity
        provider's keys when ``--caller-jwks`` is set (raises ``TokenDenied`` with its reason),
        any other token from the identities file (``None``: unknown)."""
        if self.caller_jwt is not None and looks_like_jwt(token):
            caller = await self.caller_jwt.verify(token)
            self.credentials.remember(
                caller.tenant, caller.subject_ref, caller.token, expires_at(token)
            )
            return caller
        return self.identities.authenticate(token)

    def audit_soon(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None:
        """Audit from synchronous code: appended by the recorder's writer, in order, with the
        time it happened, kept and tried again through a store outage."""
        self.recorder.audit(kind, data, session_id=session_id)

    async def audits_settled(self) -> None:
        """Wait until every audit given to :meth:`audit_soon` has been appended (or, while
        the store cannot be reached, until one more attempt found it so)."""
        await self.recorder.flush()


def build_runners(settings: Settings) -> tuple[RunnerSet, Callable[[], RunnerSet]]:
    """The shared runner set and a per-session factory (simulators keep per-session scripts)."""
    remote = endpoints(settings)
    if settings.runners == "sim":
        script: SimScript = load_script(settings.sim_script or None)
        shared = with_endpoints(build_sim_runners(script), **remote)

        def per_session() -> RunnerSet:  # a fresh script per session, the shared endpoints
            return dataclasses.replace(
                build_sim_runners(script),
                **{stage: getattr(shared, stage) for stage in shared.remote_stages()},
            )

        return shared, per_session
    if settings.runners == "gb10":
        from vocero.inference.gb10 import build_gb10_runners

        shared = build_gb10_runners()
    else:
        from vocero.inference.cpu import build_cpu_runners

        shared = build_cpu_runners()
    shared = with_endpoints(shared, **remote)
    return shared, lambda: shared


def caller_verifier(settings: Settings) -> CallerJwtVerifier | None:
    """The caller JWT verifier of ``--caller-jwks`` (SPEC §11); ``None`` without the flag."""
    if not settings.caller_jwks:
        return None
    jwt_settings = CallerJwtSettings(
        jwks=settings.caller_jwks,
        issuer=settings.caller_issuer,
        audience=settings.caller_audience,
        claims=ClaimNames.parse(settings.caller_claims),
    )
    return CallerJwtVerifier(jwt_settings, KeySource(settings.caller_jwks))


def endpoints(settings: Settings) -> dict[str, Any]:
    """Each stage's serving engine, from ``--llm-url`` and its twins (docs/deployment.md)."""
    keys = endpoint_keys()
    found: dict[str, Any] = {}
    for stage in ("llm", "stt", "tts"):
        url = getattr(settings, f"{stage}_url")
        if not url:
            continue
        model = getattr(settings, f"{stage}_model")
        if not model:
            raise ConfigError("flags", f"--{stage}-model", f"required with --{stage}-url")
        timeout_s = getattr(settings, f"{stage}_timeout_s")
        if not timeout_s > 0:
            raise ConfigError("flags", f"--{stage}-timeout-s", "must be a positive number")
        found[stage] = Endpoint(url=url, model=model, api_key=keys[stage], timeout_s=timeout_s)
    if "tts" in found:
        found["tts_voice"] = settings.tts_voice
    if "llm" in found:
        found["llm_mode"] = settings.llm_mode
    return found


def load_config(settings: Settings) -> tuple[IdentityDirectory, ProfileCatalog]:
    """Load and validate the identities and profiles (and the caller JWT flags); raises
    ConfigError naming file and field."""
    caller_verifier(settings)
    return load_identities(settings.identities_file), load_profiles(settings.profiles_dir)


async def _profile_registry(
    settings: Settings, store: Store, audit: AuditLog, knowledge: KnowledgeTools,
    files: ProfileCatalog, metrics: Metrics,
) -> ProfileRegistry:
    """The profiles' heads, with every catalog loaded into the store (docs/grounding.md): the heads'
    as they become heads, the other declared versions in the files' as they are."""
    heads = ProfileRegistry(
        settings.profiles_dir, ProfileVersions(store), audit,
        on_change=lambda profile: _sync_catalog(knowledge, profile),
        on_failure=metrics.profile_reload_failed,
        on_rollback=metrics.profile_rollbacks_total.inc,
    )
    await heads.start()
    others = [p for p in files if heads.revision(p.id) is None
              or (heads.get(p.id) or p).version != p.version]
    await knowledge.sync(others)
    return heads


async def _sync_catalog(knowledge: KnowledgeTools, profile: AgentProfile) -> None:
    await knowledge.sync([profile])


def vault_key_file(url: str) -> Path:
    """Where the vault key file lives unless ``VOCERO_VAULT_KEY``/``VOCERO_VAULT_KEY_FILE`` say
    otherwise: next to the SQLite database, else ``./var/vault.key``."""
    database = sqlite_file(async_url(url))
    return (database.parent if database is not None else Path("var")) / "vault.key"


Runners = tuple[RunnerSet, Callable[[], RunnerSet]]
"""The runners every session shares, and how a session gets its own (see :func:`build_runners`)."""


@asynccontextmanager
async def open_runtime(
    settings: Settings, config: tuple[IdentityDirectory, ProfileCatalog] | None = None, *,
    runners: Runners | None = None, gateway_for: GatewayFor | None = None,
) -> AsyncIterator[Runtime]:
    """Open everything the server holds. ``config`` is the already loaded identities and
    profiles (``serve`` loads them before binding, to fail fast); otherwise they load here.
    ``runners`` replaces the ones ``settings`` names (a benchmark's variant of them);
    ``gateway_for`` replaces the sessions' MCP gateways (``no_gateway``: MCP tools denied)."""
    identities, profiles = config or load_config(settings)
    url = db_url(settings.db)
    await upgrade_async(url)
    store = Store.open(url)
    metrics = Metrics()
    port = MetricsPort(metrics)
    node = NodeLease(store, role="serve", settings=LeaseSettings(
        ttl_s=settings.lease_ttl_s, local_liveness=settings.lease_local_liveness))
    await node.register()  # a node of this host that is gone: what it held is free now
    conversations = Conversations(store, owner=node.id, lease_ttl_s=settings.lease_ttl_s)
    audit = AuditLog(store)
    knowledge = KnowledgeTools(store)
    heads = await _profile_registry(settings, store, audit, knowledge, profiles, metrics)
    recorder = StoreRecorder(
        RecordOps(store, owner=node.id),
        on_drop=lambda reason: port.count("recorder_drops", reason=reason),
        units=True, audit=audit,
        on_pending=lambda pending: port.gauge("queue_depth", pending, link="recorder"),
        batched=True,  # one transaction (on SQLite one worker-thread call) per batch of writes
    )
    shared, per_session = runners or build_runners(settings)
    metrics.registry.register(EndpointCollector(shared))  # serving engines, by stage
    vault_key = load_key(vault_key_file(url))  # one key, read once, never printed
    # MCP OAuth tokens are sealed with the vault key (docs/mcp.md "OAuth").
    cipher = VaultCipher(vault_key)
    consents = OperatorConsent(  # an operator authorizes a server in a browser
        SqlConsentRepository(store), cipher, node_id=node.id, audit=partial(record_safely, audit),
    )
    mcp_auth = AuthOptions(
        sealer=cipher, repository=SqlOAuthTokenRepository(store), operator=consents,
    )
    credentials = CallerCredentials()
    connections = McpConnections.from_profiles(
        list(profiles), audit=audit, pins=SqlPinRepository(store), auth=mcp_auth,
        subjects=credentials,
        settings=GatewaySettings(input_timeout_s=settings.mcp_input_timeout_s,
                                 auto_approve_first_seen=settings.tool_approval != "review"),
    )
    if gateway_for is None:
        def gateway_for(profile: AgentProfile, caller: Caller | None) -> ToolGateway | None:
            return McpGateway(connections, profile, observer=port)
    sessions_gateway = gateway_for
    followups = followup_services(
        store, SystemClock(), conversations, recorder=recorder, metrics=port,
        profiles=heads.get,
    )
    handoff = handoff_services(
        settings, followups.store, sessions=conversations.get_session, profiles=heads.get,
        audit=audit,
    )
    callbacks = carrier_call_tools(settings, followups.store, profiles=heads.get, audit=audit)
    builtins = BuiltinSet(builtin_tools(followups), knowledge, handoff.tools, callbacks)
    actions = ActionPlane(
        store,
        builtins=builtins,
        profiles=heads.get,
        metrics=port,
        gateway_for=lambda profile: sessions_gateway(profile, None),
        owner=node.id,
        lease_ttl_s=settings.lease_ttl_s,
        executor_settings=ExecutorSettings(
            max_concurrency=max(1, settings.outbox_concurrency),
            retry_delay_s=settings.outbox_retry_s,
        ),
    )
    queue = followups.attach_queue(actions, profiles=heads.get, directory=identities, lease=node)
    vault = VoiceVault(store, key=vault_key, on_revoked=getattr(shared.tts, "forget_voice", None))
    runtime = Runtime(
        settings=settings, identities=identities, profiles=heads, store=store, audit=audit,
        conversations=conversations, recorder=recorder, metrics=metrics, port=port,
        runners_for_session=per_session, shared_runners=shared, node=node,
        connections=connections, consents=consents, gateway_for=sessions_gateway,
        actions=actions, builtins=builtins, followups=followups, vault=vault,
        caller_jwt=caller_verifier(settings), credentials=credentials,
        call_accounts=handoff.accounts,
    )
    try:
        await vault.load()
        # sessions a crash left live are closed (and stay resumable) before any connection;
        # those of live peers are theirs
        await recover_interrupted_sessions(
            conversations, audit, window_s=settings.resume_window_s,
            on_closed=followups.session_ended,
        )
        async with anyio.create_task_group() as tg:
            await tg.start(partial(node.run, on_beat=partial(_heartbeat, runtime),
                                   on_failure=partial(_store_lost, runtime)))
            await tg.start(recorder.run)
            await tg.start(actions.run)
            await tg.start(followups.reviews.run)
            tick = partial(run_ticks, queue, SystemClock(), settings.followups_tick_s)
            await tg.start(partial(tick, ready=runtime.ready))
            tg.start_soon(_warm_up, runtime, tg)
            try:
                yield runtime
            finally:
                for session in list(runtime.live.values()):
                    session.close("shutdown")
                await actions.drain(5)
                with anyio.move_on_after(5, shield=True):
                    await recorder.flush()
                    await runtime.audits_settled()
                recorder.stop()
                await _release(node)
                tg.cancel_scope.cancel()
    finally:
        await store.close()


async def _store_lost(runtime: Runtime) -> None:
    """The store stopped answering (a renewal failed): every live session says so once per
    outage (``error.v1`` ``STORE_UNAVAILABLE``) and goes ``DEGRADED`` once per outage, as soon
    as it is idle (one busy answering when the store went away, at a later failed renewal);
    writes fail closed meanwhile (nothing is sent without its durable record). Speech or a
    turn takes a degraded session back to listening, as after a recogniser outage."""
    if not runtime.outage.down:
        runtime.outage.down = True
        log.warning("store.unavailable", sessions=len(runtime.live))
    outage = runtime.outage.told
    for session_id, session in list(runtime.live.items()):
        if outage.get(session_id):
            continue
        if session_id not in outage:
            session.core.error(ErrorCode.STORE_UNAVAILABLE)
        outage[session_id] = session.dependency_failed()  # busy: not taken yet
    for session_id in set(outage) - set(runtime.live):
        del outage[session_id]


def _store_back(runtime: Runtime) -> None:
    runtime.outage.down = False
    runtime.outage.told.clear()
    log.info("store.available", sessions=len(runtime.live))
    for session in list(runtime.live.values()):
        session.dependency_recovered()


async def _heartbeat(runtime: Runtime) -> None:
    """After each renewal: leave a store outage, let go of live sessions another process took
    over (a resume there), and take over sessions whose holder is gone (closed as ended by a
    crash, resumable anywhere)."""
    if runtime.outage.down:
        _store_back(runtime)
    lost = await runtime.conversations.not_held(list(runtime.live))
    for session_id in lost:
        session = runtime.live.get(session_id)
        if session is not None:
            log.info("session.held_elsewhere", session_id=session_id)
            session.close("replaced")
    await recover_interrupted_sessions(
        runtime.conversations, runtime.audit, window_s=runtime.settings.resume_window_s,
        on_closed=runtime.followups.session_ended,
    )


async def _release(node: NodeLease) -> None:
    """Hand back what this process still holds, so peers need not wait for its lease."""
    with anyio.move_on_after(3, shield=True):
        try:
            await node.release()
        except Exception:  # the database is gone: peers take over when the lease runs out
            log.warning("node.release_failed", node_id=node.id)


def freeze_heap() -> None:
    """Collect what is garbage now, then move every object left (the models, the ORM, the
    locale data) into the collector's permanent generation: later full collections walk only
    what was allocated since. A full collection of the warm CPU process took 243 ms of event
    loop (gc callbacks, bench ttfs); objects frozen here that later form garbage cycles are
    freed by reference counting or not at all, which a long-lived server can afford."""
    gc.collect()
    gc.freeze()


def _warm_locales(locales: list[str]) -> None:
    for tag in locales:
        warm_locale(tag)


async def _warm_up(runtime: Runtime, tg: anyio.abc.TaskGroup) -> None:
    """Ready once every runner is warm and every MCP server had its first connection attempt
    (the connections then run in ``tg``, the runtime's own task group)."""
    started = time.monotonic()
    locales = sorted({profile.locale for profile in runtime.profiles} | {"en-US"})
    async with anyio.create_task_group() as warming:
        warming.start_soon(runtime.shared_runners.warm_up)
        # The spoken forms' CLDR data, off the event loop (its first use blocks for ~0.25 s).
        warming.start_soon(anyio.to_thread.run_sync, _warm_locales, locales)
        await tg.start(runtime.connections.run)
    if runtime.settings.freeze_heap:
        freeze_heap()
    runtime.ready.set()
    log.info(
        "runners.ready",
        kind=runtime.shared_runners.kind,
        seconds=round(time.monotonic() - started, 2),
    )
