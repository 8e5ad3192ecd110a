"""Opens sessions for the relay: effective configuration, voice, tools, persistence."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from vocero.app.runtime import Runtime
from vocero.contracts.domain import DEFAULT_VOICE, AgentProfile, Caller, ToolDefinition, VoiceRef
from vocero.contracts.errors import AuthError, ErrorCode
from vocero.contracts.events import Effective
from vocero.orchestrator.context import SessionContext
from vocero.orchestrator.ids import new_id
from vocero.orchestrator.output import OutputChannel
from vocero.orchestrator.session import Session
from vocero.policy import SessionCoordinator
from vocero.policy.builtins import SCHEMA as FOLLOWUP_SCHEMA


@dataclass
class OpenSession:
    session: Session
    runtime: Runtime
    coordinator: SessionCoordinator | None = None

    async def aclose(self) -> None:
        session = self.session
        if self.coordinator is not None:
            self.coordinator.close()
        self.runtime.live.pop(session.ctx.session_id, None)
        self.runtime.recorder.close(session.ctx.session_id, session.machine.state)
        self.runtime.audit_soon(
            "session.closed", {"state": session.machine.state}, session_id=session.ctx.session_id
        )


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
    ) -> OpenSession:
        runtime = self.runtime
        runners = runtime.runners_for_session()
        voice, voice_usable = await self._voice(profile, caller)
        effective = Effective(
            locale=locale,
            turn_mode=turn_mode,  # type: ignore[arg-type]
            voice_profile_id=voice.voice_profile_id,
            voice_version=voice.voice_version,
            output_sample_rate=runners.tts.sample_rate,
            profile_id=profile.id,
            profile_version=profile.version,
        )
        session_id = new_id("ses")
        ctx = SessionContext(
            session_id=session_id,
            caller=caller,
            profile=profile,
            effective=effective,
            voice=voice,
            tools=self._tools(profile),
            voice_usable=voice_usable,
        )
        await runtime.conversations.create_session(
            session_id=session_id,
            tenant_id=caller.tenant,
            subject_ref=caller.subject_ref,
            profile_id=profile.id,
            profile_version=profile.version,
            state="CONFIGURING",
            effective={f: getattr(effective, f) for f in effective.__struct_fields__},
        )
        await runtime.audit.record(
            "session.opened",
            {
                "tenant_id": caller.tenant,
                "subject_ref": caller.subject_ref,
                "profile_id": profile.id,
                "profile_version": profile.version,
                "voice_profile_id": voice.voice_profile_id,
                "voice_version": voice.voice_version,
            },
            session_id=session_id,
        )
        coordinator = None
        gateway = runtime.gateway_for(profile, caller)
        if gateway is not None:
            ctx = replace(ctx, tools=self._tools(profile, gateway.definitions()))
        if runtime.actions is not None:
            coordinator = runtime.actions.coordinator(
                session_id=session_id,
                caller=caller,
                profile=profile,
                gateway=gateway,
            )
        session = Session(
            ctx,
            runners,
            out,
            coordinator=coordinator,
            recorder=runtime.recorder,
            metrics=runtime.port,
            monotonic=runtime.monotonic,
        )
        runtime.live[session_id] = session
        return OpenSession(session=session, runtime=runtime, coordinator=coordinator)

    async def _voice(
        self, profile: AgentProfile, caller: Caller
    ) -> tuple[VoiceRef, Callable[[], bool]]:
        """The profile's voice resolved through the vault (approved, unrevoked, in its usage
        period, of the caller's tenant) and its per-unit usability check; the built-in default
        voice when the profile names none. An unavailable voice refuses the session."""
        if profile.voice is None:
            return DEFAULT_VOICE, lambda: True
        vault = self.runtime.vault
        wanted = profile.voice
        voice = None
        if vault is not None:
            voice = await vault.resolve(wanted.profile_id, wanted.version, tenant=caller.tenant)
        if vault is None or voice is None:
            self.audit(
                "session.voice_denied",
                {
                    "tenant_id": caller.tenant,
                    "profile_id": profile.id,
                    "voice_profile_id": wanted.profile_id,
                    "voice_version": wanted.version,
                },
            )
            raise AuthError("voice unavailable", code=ErrorCode.PROFILE_DENIED)
        return voice, partial(vault.is_usable, voice.voice_profile_id, voice.voice_version)

    def _tools(
        self, profile: AgentProfile, pinned: Sequence[ToolDefinition] = ()
    ) -> tuple[ToolDefinition, ...]:
        """What the model may see: the gateway's pinned, approved MCP tools plus the profile's
        built-in tools. Prohibited and unlisted tools do not exist for the model."""
        builtins = [
            ToolDefinition(name=t.name, description=t.description, input_schema=FOLLOWUP_SCHEMA)
            for t in profile.tools
            if t.server == "vocero" and t.action_class != "prohibited"
        ]
        return (*pinned, *builtins)
