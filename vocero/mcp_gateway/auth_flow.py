"""OAuth for one server connection: its tokens, its guard, and an operator's consent (docs/mcp.md
"OAuth 2.1", docs/adr/0019).

A server with ``oauth`` gets sealed token storage and the SDK's provider behind a failure guard
(:mod:`vocero.mcp_gateway.oauth`). When the server wants an authorization nobody has given yet
and an operator can give it in a browser, one flow waits for that consent in the background while
calls fail fast; the supervisor waits for the consent instead of a backoff timer, and a grant
ends its wait at once. New credentials start a new cache epoch: nothing listed under the old
ones is trusted again.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import structlog
from anyio.abc import TaskGroup

from vocero.contracts.domain import McpServerSpec
from vocero.contracts.errors import ToolUnavailableError
from vocero.mcp_gateway.adapters import OpenOptions
from vocero.mcp_gateway.consent import GrantedElsewhere, OperatorConsent
from vocero.mcp_gateway.delegation import DelegatedBearer
from vocero.mcp_gateway.errors import ServerAuthError, ServerRefusedError, consent_failure
from vocero.mcp_gateway.oauth import (
    AuthGuard,
    Consent,
    InMemoryOAuthTokenRepository,
    OAuthTokenRepository,
    SealedTokenStorage,
    Sealer,
    authorize,
    preregister,
)
from vocero.mcp_gateway.oauth_grants import build_auth
from vocero.mcp_gateway.outbox import AuditOutbox
from vocero.mcp_gateway.questions import QuestionDesk

log = structlog.get_logger("vocero.mcp_gateway")


@dataclass(frozen=True, slots=True)
class AuthOptions:
    """How connections obtain and keep OAuth tokens (servers with ``oauth`` only)."""

    sealer: Sealer
    repository: OAuthTokenRepository = field(default_factory=InMemoryOAuthTokenRepository)
    consent: Consent | None = None
    """Asked inline, by the request that needs authorization (a stand-in operator, tests)."""
    operator: OperatorConsent | None = None
    """An operator's consent in a browser: when a server needs it, one flow waits for it in the
    background while calls fail fast (docs/mcp.md "OAuth"). Used when ``consent`` is not set."""
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))


class AuthFlow:
    """One connection's OAuth: the options its sessions open with, and the operator's consent
    awaited in the background when the server needs one."""

    def __init__(
        self,
        name: str,
        spec: McpServerSpec,
        options: AuthOptions | None,
        *,
        outbox: AuditOutbox,
        new_credentials: Callable[[], None],
    ) -> None:
        self.name = name
        self.spec = spec
        self.tokens: SealedTokenStorage | None = None
        self._options = options
        self._outbox = outbox
        self._new_credentials = new_credentials
        self._guard: AuthGuard | None = None
        self._tasks: TaskGroup | None = None
        self._authorizing = False
        self._authorized = anyio.Event()
        self._authorization_ended = anyio.Event()

    async def open_options(self, desk: QuestionDesk) -> OpenOptions:
        """The question desk, and OAuth when the server has it (refused if misconfigured)."""
        options = OpenOptions(desk=desk)
        per_caller = self.spec.auth
        if per_caller is not None and (per_caller.token_exchange or per_caller.enterprise):
            if per_caller.token_exchange is not None and per_caller.enterprise is not None:
                raise ServerRefusedError("delegation_ambiguous")
            if self.spec.oauth is not None:
                raise ServerRefusedError("delegation_with_oauth")
            if not self.spec.url:
                raise ServerRefusedError("delegation_needs_http")
            options.auth = DelegatedBearer()  # each caller's own token (docs/adr/0027)
            return options
        if self.spec.oauth is None:
            return options
        if self._options is None:
            raise ServerRefusedError("oauth_unavailable")
        auth = self._options
        self.tokens = SealedTokenStorage(
            self.name, auth.repository, auth.sealer, on_grant=self._granted
        )
        await preregister(self.tokens, self.spec, auth.environ)
        self._guard = build_auth(
            self.name,
            self.spec,
            self.tokens,
            consent=auth.consent,
            on_failure=self._failed,
            environ=auth.environ,
        )
        options.auth = self._guard
        return options

    def unavailable(self) -> ToolUnavailableError:
        """Why calls fail while there is no session: the authorization, when that is why."""
        if self._guard is not None and self._guard.last_failure:
            return ServerAuthError(self._guard.last_failure)
        return ToolUnavailableError("not_connected")

    @asynccontextmanager
    async def consenting(self) -> AsyncIterator[None]:
        """While this block runs, an operator's consent is awaited in the background when the
        server needs one; the wait ends with the block."""
        try:
            async with anyio.create_task_group() as tasks:
                self._tasks = tasks
                yield
                tasks.cancel_scope.cancel()
        finally:
            self._tasks = None

    @property
    def awaiting_consent(self) -> bool:
        """Whether a flow waits for an operator's consent now."""
        return self._authorizing

    async def consent_ended(self) -> None:
        """Until the flow waiting for an operator's consent ends (granted or not)."""
        await self._authorization_ended.wait()

    async def granted(self) -> None:
        """Until an operator's consent brings tokens (then :meth:`take_grant` says so)."""
        await self._authorized.wait()

    def take_grant(self) -> bool:
        """Whether an operator's consent brought tokens since the last call."""
        granted = self._authorized.is_set()
        self._authorized = anyio.Event()
        return granted

    def _granted(self, scope: str | None) -> None:
        """New or wider credentials: nothing fetched under the old ones is used again."""
        self._outbox.succeeded()
        self._new_credentials()
        self._outbox.queue("mcp.oauth_granted", {"server": self.name, "scope": scope or ""})

    def _failed(self, reason: str) -> None:
        self._new_credentials()
        self._outbox.failed("mcp.oauth_failed", {"server": self.name, "reason": reason})
        auth = self._options
        if (
            reason == "server_authorization_required"
            and auth is not None
            and auth.consent is None
            and auth.operator is not None
            and self._tasks is not None
            and not self._authorizing
        ):
            self._authorizing = True
            self._authorization_ended = anyio.Event()
            self._tasks.start_soon(self._authorize, auth.operator)

    async def _authorize(self, operator: OperatorConsent) -> None:
        """Wait in the background for an operator's consent; then use the new tokens at once.
        The consent is settled by what the token exchange did: granted, or failed and why."""
        assert self.tokens is not None and self._guard is not None
        environ = self._options.environ if self._options is not None else os.environ
        failure: str | None = "interrupted"
        granted = False
        try:
            granted = await authorize(self.name, self.spec, self.tokens, operator.wait, environ)
            failure = None if granted else "no_tokens"
        except GrantedElsewhere:
            granted, failure = True, None  # another node's grant is in the shared record
        except Exception as exc:  # boundary: refused, expired, the code refused, unreachable
            failure = consent_failure(exc)
            log.warning(
                "mcp.oauth_consent_failed",
                server=self.name,
                reason_code=failure,
                error=type(exc).__name__,
            )
        finally:
            with anyio.CancelScope(shield=True):
                await operator.settle(self.name, failure)
            self._authorizing = False
            self._authorization_ended.set()
        if granted:
            self.tokens.reload()
            self._guard.reload()
            self._authorized.set()
