"""Opens sessions for the relay: effective configuration, voice, tools, persistence, resumption.

Every session gets a ``resume_token`` (only its SHA-256 is stored). When a connection ends
without ``session.close.v1`` (network loss, server restart), the same caller may resume the
session within ``resume_window_s`` on a new connection, if the profile has not changed: same
``session_id``, the history as heard (caller turns and assistant text as played), a new token.
Uncommitted audio and generations are not resumed. The statuses of the session's recent writes
are sent again, and a confirmation question read back and never acted on is asked again (an
answer may have been lost with the connection: :mod:`vocero.orchestrator.resuming`).

A token issued by one process is honoured by any other on the same store (same identity, same
profile version): the session is taken over, held by the resuming process from then on, and its
history rebuilt from the store. If its previous holder still runs, it lets go at its next
heartbeat (its writes to the session are refused once it is taken over).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Protocol

import anyio
import structlog

from vocero.app.adapters.followups import FollowupServices
from vocero.app.adapters.recorder import StoreRecorder
from vocero.app.adapters.telemetry import MetricsPort
from vocero.app.settings import Settings
from vocero.contracts.builtins import BuiltinSet
from vocero.contracts.domain import DEFAULT_VOICE, AgentProfile, Caller, ToolDefinition, VoiceRef
from vocero.contracts.errors import AuthError, ErrorCode
from vocero.contracts.events import Effective, RejectedField, ToolStatusChanged
from vocero.contracts.ports import Message, ToolGateway, Tts, speaks
from vocero.contracts.secrets import NO_SECRET, Secret
from vocero.inference.runner_set import RunnerSet
from vocero.mcp_gateway.gateway import McpGateway
from vocero.orchestrator.caller_pace import PaceSettings
from vocero.orchestrator.context import SessionContext
from vocero.orchestrator.drafts import RecoverySettings
from vocero.orchestrator.false_interruptions import ResumeSettings
from vocero.orchestrator.ids import new_id
from vocero.orchestrator.output import OutputChannel
from vocero.orchestrator.resuming import Resumed
from vocero.orchestrator.session import Session
from vocero.policy import ActionPlane, SessionCoordinator
from vocero.store.audit import AuditLog
from vocero.store.engine import unreachable
from vocero.store.records import SessionRecord
from vocero.store.repositories import Conversations
from vocero.voice_vault import VoiceVault

GatewayFor = Callable[[AgentProfile, Caller | None], ToolGateway | None]
"""The MCP gateway of a session (``caller`` is ``None`` when the outbox worker resumes an
operation after a restart and no caller is connected). ``None``: MCP tools are denied with
``authorization_unavailable``."""


class Runtime(Protocol):
    """What opening, resuming and closing a session needs of the running server: the store and
    its recorder, the planes a session calls, and the table of live sessions. The composition
    root's :class:`vocero.app.runtime.Runtime` is one."""

    @property
    def settings(self) -> Settings: ...
    @property
    def conversations(self) -> Conversations: ...
    @property
    def recorder(self) -> StoreRecorder: ...
    @property
    def audit(self) -> AuditLog: ...
    @property
    def port(self) -> MetricsPort: ...
    @property
    def runners_for_session(self) -> Callable[[], RunnerSet]: ...
    @property
    def monotonic(self) -> Callable[[], float]: ...
    @property
    def gateway_for(self) -> GatewayFor: ...
    @property
    def actions(self) -> ActionPlane | None: ...
    @property
    def builtins(self) -> BuiltinSet | None: ...
    @property
    def followups(self) -> FollowupServices | None: ...
    @property
    def vault(self) -> VoiceVault | None: ...
    @property
    def live(self) -> dict[str, Session]: ...
    @property
    def released(self) -> dict[str, anyio.Event]: ...
    def audit_soon(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None: ...


log = structlog.get_logger(__name__)
TAKE_OVER_S = 5.0
"""How long a resume waits for the old connection of its session to let go."""


@dataclass
class OpenSession:
    session: Session
    runtime: Runtime
    coordinator: SessionCoordinator | None = None
    resume_token: Secret = NO_SECRET
    rejected: list[RejectedField] = field(default_factory=list)
    """Why a ``resume_token`` sent at connect was not honoured (a new session was opened)."""
    resumed: bool = False

    def applied(self, effective: Effective) -> None:
        """Persist the configuration an update applied, so the session's record shows the last
        one applied (``GET /v1/sessions/{id}`` after close), not the one it opened with."""
        self.runtime.recorder.configuration(self.session.ctx.session_id, _as_dict(effective))

    async def aclose(self, *, resumable: bool = False) -> None:
        """Release the session; ``resumable=False`` (the client closed it) withdraws its token."""
        session, runtime = self.session, self.runtime
        session_id = session.ctx.session_id
        if self.coordinator is not None:
            self.coordinator.close()
        try:
            if not resumable:  # written now, not queued: the recorder may shed writes
                await runtime.conversations.update_session(session_id, resume_token_hash="")
        except Exception as exc:
            if unreachable(exc):  # the store is away: withdrawn as soon as it answers again
                log.warning("session.resume_token_withdrawal_queued", session_id=session_id)
                runtime.recorder.withdraw_resume(session_id)
            else:
                log.exception("session.resume_token_not_withdrawn", session_id=session_id)
        finally:
            runtime.live.pop(session_id, None)
            runtime.recorder.close(session_id, session.state_name)
            released = runtime.released.pop(session_id, None)
            if released is not None:
                released.set()
            runtime.audit_soon(
                "session.closed", {"state": session.state_name}, session_id=session_id
            )
            if runtime.followups is not None:  # review what was heard (promised_unbooked)
                runtime.followups.session_ended(session_id)


class SessionFactory:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def audit(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None:
        self.runtime.audit_soon(kind, data, session_id=session_id)

    async def open(
        self,
        caller: Caller,
        profile: AgentProfile,
        out: OutputChannel,
        *,
        turn_mode: str,
        locale: str,
        resume_token: Secret | None = None,
        channel: str = "web",
        call_sid: str = "",
        followup_id: str = "",
        opening: str = "",
    ) -> OpenSession:
        """``channel``: ``web``, or the carrier a phone call came through (``twilio``, with
        its ``call_sid``): recorded on the session, and on the phone read-backs say how to
        answer with a key."""
        runtime = self.runtime
        rejected: list[RejectedField] = []
        previous: SessionRecord | None = None
        if resume_token:
            previous, refusal = await self._to_resume(resume_token, caller, profile)
            if previous is None:
                rejected.append(RejectedField(field="resume_token", reason=refusal))
        token = Secret(secrets.token_urlsafe(24))
        runners = runtime.runners_for_session()
        voice, voice_usable = await self._voice(profile, caller, runners.tts)
        effective = Effective(
            locale=locale,
            turn_mode=turn_mode,  # type: ignore[arg-type]
            voice_profile_id=voice.voice_profile_id,
            voice_version=voice.voice_version,
            output_sample_rate=runners.tts.sample_rate,
            profile_id=profile.id,
            profile_version=profile.version,
        )
        session_id = previous.id if previous is not None else new_id("ses")
        ctx = SessionContext(
            session_id=session_id,
            caller=caller,
            profile=profile,
            effective=effective,
            voice=voice,
            tools=self._tools(profile),
            voice_usable=voice_usable,
            channel=channel,
            opening=opening if previous is None else "",
        )
        if previous is not None:
            reopened = await runtime.conversations.reopen_session(
                session_id, resume_token_hash=_token_hash(token)
            )
            if previous.closed_at is None and reopened.owner_id:  # open in another process
                await runtime.audit.record(
                    "session.taken_over", {"from": reopened.owner_id, "reason": "resume"},
                    session_id=session_id,
                )
        else:
            await runtime.conversations.create_session(
                session_id=session_id,
                tenant_id=caller.tenant,
                subject_ref=caller.subject_ref,
                profile_id=profile.id,
                profile_version=profile.version,
                state="CONFIGURING",
                effective=_as_dict(effective),
                resume_token_hash=_token_hash(token),
                channel=channel,
                call_sid=call_sid,
                followup_id=followup_id,
            )
        await runtime.audit.record(
            "session.resumed" if previous is not None else "session.opened",
            {
                "tenant_id": caller.tenant,
                "subject_ref": caller.subject_ref,
                "profile_id": profile.id,
                "profile_version": profile.version,
                "voice_profile_id": voice.voice_profile_id,
                "voice_version": voice.voice_version,
                "channel": channel,
                **({"call_sid": call_sid} if call_sid else {}),
                **({"followup_id": followup_id} if followup_id else {}),
            },
            session_id=session_id,
        )
        coordinator = None
        gateway = runtime.gateway_for(profile, caller)
        if gateway is not None:
            refused = tuple(gateway.refused()) if isinstance(gateway, McpGateway) else None
            ctx = replace(ctx, tools=self._tools(profile, gateway.definitions()), refused=refused)
        if runtime.actions is not None:
            coordinator = runtime.actions.coordinator(
                session_id=session_id,
                caller=caller,
                profile=profile,
                gateway=gateway,
                keypad=channel != "web",
            )
        history = await self._heard_history(session_id) if previous is not None else []
        resumed = await _resumed(coordinator) if previous is not None else None
        session = Session(
            ctx,
            runners,
            out,
            coordinator=coordinator,
            recorder=runtime.recorder,
            metrics=runtime.port,
            monotonic=runtime.monotonic,
            history=history,
            resumed=resumed,
            recovery=RecoverySettings(
                drafts=runtime.settings.prepared_answers,
                merge_window_ms=runtime.settings.merge_window_ms,
            ),
            false_interruptions=false_interruptions_of(runtime.settings),
            caller_pace=caller_pace_of(runtime.settings),
        )
        runtime.live[session_id] = session
        runtime.released[session_id] = anyio.Event()
        return OpenSession(
            session=session,
            runtime=runtime,
            coordinator=coordinator,
            resume_token=token,
            rejected=rejected,
            resumed=previous is not None,
        )

    async def _to_resume(
        self, token: Secret, caller: Caller, profile: AgentProfile
    ) -> tuple[SessionRecord | None, str]:
        """The session ``token`` resumes, or ``None`` and why not.

        A session still attached to a connection of this process (the server has not yet
        noticed that the old connection died) is taken over: its connection is closed first.
        One still open in another process is taken from it (``reopen_session``)."""
        runtime = self.runtime
        attached = await runtime.conversations.session_by_resume_hash(_token_hash(token))
        if (
            attached is not None
            and (attached.tenant_id, attached.subject_ref) == (caller.tenant, caller.subject_ref)
            and attached.owner_id in ("", runtime.conversations.owner)
        ) and not await self._take_over(attached.id):
            return None, "in_use"
        found = await runtime.conversations.session_to_resume(
            _token_hash(token), window_s=runtime.settings.resume_window_s
        )
        if found is None or (found.tenant_id, found.subject_ref) != (
            caller.tenant,
            caller.subject_ref,
        ):
            return None, "unknown_or_expired"
        if found.id in runtime.live:
            return None, "in_use"
        if (found.profile_id, found.profile_version) != (profile.id, profile.version):
            return None, "profile_changed"
        return found, ""

    async def _take_over(self, session_id: str) -> bool:
        """Close the session's old connection, then wait until that session's own records
        have reached the store (its close above all: reopened before it, the session would be
        closed under its new connection), and say whether they have. Not the whole recorder's
        queue: this connection holds a session slot meanwhile, and under load the other
        sessions' writes would hold it for seconds (docs/scaling.md "Soak"). Each wait is
        bounded by :data:`TAKE_OVER_S`; ``False``: the record did not land in time (the resume
        is refused ``in_use``, and may be tried again)."""
        runtime = self.runtime
        session, released = runtime.live.get(session_id), runtime.released.get(session_id)
        if session is not None and released is not None:
            session.close("replaced")
            with anyio.move_on_after(TAKE_OVER_S):
                await released.wait()
        with anyio.move_on_after(TAKE_OVER_S) as waiting:
            await runtime.recorder.flush_session(session_id)
        if waiting.cancelled_caught:
            log.warning("session.take_over_unflushed", session_id=session_id,
                        pending=runtime.recorder.pending)
            return False
        return True

    async def _heard_history(self, session_id: str) -> list[Message]:
        """What the model may see again: caller turns and assistant text as it was heard."""
        entries = await self.runtime.conversations.history(session_id)
        return [Message(role=e.role, content=e.text) for e in entries if e.text]

    async def _voice(
        self, profile: AgentProfile, caller: Caller, tts: Tts
    ) -> tuple[VoiceRef, Callable[[], bool]]:
        """The voice the session speaks, which is the one ``effective`` reports (SPEC §3), and
        its per-unit usability check: the profile's voice resolved through the vault (approved,
        unrevoked, in its usage period, of the caller's tenant) when the session's TTS speaks it
        as approved; the built-in default voice when the profile names none, or, where the
        profile allows a fallback, when the TTS cannot speak the approved version. Otherwise
        the session is refused with ``VOICE_UNAVAILABLE``; never spoken in another voice."""
        if profile.voice is None:
            return DEFAULT_VOICE, lambda: True
        vault = self.runtime.vault
        wanted = profile.voice
        voice = None
        if vault is not None:
            voice = await vault.resolve(wanted.profile_id, wanted.version, tenant=caller.tenant)
        if vault is None or voice is None:
            raise self._voice_denied(profile, caller, "voice_unavailable")
        if speaks(tts, voice):
            return voice, partial(vault.is_usable, voice.voice_profile_id, voice.voice_version)
        if profile.allow_voice_fallback and speaks(tts, DEFAULT_VOICE):
            self.audit(
                "session.voice_fallback",
                {
                    "tenant_id": caller.tenant,
                    "profile_id": profile.id,
                    "voice_profile_id": wanted.profile_id,
                    "voice_version": wanted.version,
                    "spoken_voice_profile_id": DEFAULT_VOICE.voice_profile_id,
                    "spoken_voice_version": DEFAULT_VOICE.voice_version,
                    "reason_code": "voice_not_spoken_by_runner",
                },
            )
            log.warning("session.voice_fallback", voice_profile_id=wanted.profile_id,
                        voice_version=wanted.version)
            return DEFAULT_VOICE, lambda: True
        raise self._voice_denied(profile, caller, "voice_not_spoken_by_runner")

    def _voice_denied(self, profile: AgentProfile, caller: Caller, reason: str) -> AuthError:
        """Why the session is refused (audited, counted): its voice cannot be spoken as
        approved."""
        wanted = profile.voice
        assert wanted is not None
        self.audit(
            "session.voice_denied",
            {
                "tenant_id": caller.tenant,
                "profile_id": profile.id,
                "voice_profile_id": wanted.profile_id,
                "voice_version": wanted.version,
                "reason_code": reason,
            },
        )
        self.runtime.port.count("denials", reason_code=reason)
        return AuthError("voice unavailable", code=ErrorCode.VOICE_UNAVAILABLE)

    def _tools(
        self, profile: AgentProfile, pinned: Sequence[ToolDefinition] = ()
    ) -> tuple[ToolDefinition, ...]:
        """What the model may see: the gateway's pinned, approved MCP tools plus the profile's
        built-in tools. Prohibited and unlisted tools do not exist for the model, nor does the
        profile's follow-up call tool (only the follow-up queue places calls)."""
        own = self.runtime.builtins
        call_tool = profile.followups.call_tool
        builtins = [
            ToolDefinition(
                name=t.name,
                description=t.description,
                input_schema=own.schema(t.resolves_to),
                builtin=t.resolves_to,
                examples=list(t.examples),
            )
            for t in profile.tools
            if t.server == "vocero" and t.action_class != "prohibited"
            and own is not None and own.handles(t.resolves_to) and t.name != call_tool
        ]
        return (*(d for d in pinned if not call_tool or d.name != call_tool), *builtins)


def false_interruptions_of(settings: Settings) -> ResumeSettings:
    """``--resume-false-interruptions``, ``--false-interruption-window-ms``,
    ``--false-interruption-grace-ms`` (ADR-0038)."""
    return ResumeSettings(enabled=settings.resume_false_interruptions,
                          window_ms=settings.false_interruption_window_ms,
                          grace_ms=settings.false_interruption_grace_ms)


def caller_pace_of(settings: Settings) -> PaceSettings:
    """``--caller-pace``, ``--pace-floor-min-ms``, ``--pace-floor-max-ms``,
    ``--pace-after-pauses`` (ADR-0038)."""
    return PaceSettings(enabled=settings.caller_pace, floor_min_ms=settings.pace_floor_min_ms,
                        floor_max_ms=settings.pace_floor_max_ms,
                        after_pauses=settings.pace_after_pauses)


async def _resumed(coordinator: SessionCoordinator | None) -> Resumed:
    """What a resumed session tells first (:mod:`vocero.orchestrator.resuming`): its recent
    writes' statuses (``tool_call_id`` is the operation's id) and the question asked and never
    acted on, active again."""
    if coordinator is None:
        return Resumed()
    statuses = tuple(
        ToolStatusChanged(tool_call_id=op.id, proposal_id=op.proposal_id or "",
                          status=op.status, reason_code=op.reason_code)
        for op in await coordinator.recent_writes()
    )
    return Resumed(statuses=statuses, question=await coordinator.restore_question())


def _token_hash(token: Secret) -> str:
    return hashlib.sha256(token.reveal().encode()).hexdigest()


def _as_dict(effective: Effective) -> dict[str, Any]:
    return {f: getattr(effective, f) for f in effective.__struct_fields__}
