"""Opens sessions for the relay: effective configuration, voice, tools, persistence."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vocero.app.runtime import Runtime
from vocero.contracts.domain import DEFAULT_VOICE, AgentProfile, Caller, ToolDefinition, VoiceRef
from vocero.contracts.events import Effective
from vocero.orchestrator.context import SessionContext
from vocero.orchestrator.output import OutputChannel
from vocero.orchestrator.session import Session, new_id


@dataclass
class OpenSession:
    session: Session
    runtime: Runtime

    async def aclose(self) -> None:
        session = self.session
        self.runtime.live.pop(session.ctx.session_id, None)
        self.runtime.recorder.close(session.ctx.session_id, session.machine.state)
        self.runtime.audit_soon("session.closed", {"state": session.machine.state},
                                session_id=session.ctx.session_id)


class SessionFactory:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def audit(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None:
        self.runtime.audit_soon(kind, data, session_id=session_id)

    async def open(self, caller: Caller, profile: AgentProfile, out: OutputChannel, *,
                   turn_mode: str, locale: str) -> OpenSession:
        runtime = self.runtime
        runners = runtime.runners_for_session()
        voice = self._voice(profile)
        effective = Effective(
            locale=locale, turn_mode=turn_mode,  # type: ignore[arg-type]
            voice_profile_id=voice.voice_profile_id, voice_version=voice.voice_version,
            output_sample_rate=runners.tts.sample_rate, profile_id=profile.id,
            profile_version=profile.version,
        )
        session_id = new_id("ses")
        ctx = SessionContext(session_id=session_id, caller=caller, profile=profile,
                             effective=effective, voice=voice, tools=self._tools(profile))
        await runtime.conversations.create_session(
            session_id=session_id, tenant_id=caller.tenant, subject_ref=caller.subject_ref,
            profile_id=profile.id, profile_version=profile.version, state="CONFIGURING",
            effective={f: getattr(effective, f) for f in effective.__struct_fields__},
        )
        await runtime.audit.record("session.opened", {
            "tenant_id": caller.tenant, "subject_ref": caller.subject_ref,
            "profile_id": profile.id, "profile_version": profile.version,
            "voice_profile_id": voice.voice_profile_id, "voice_version": voice.voice_version,
        }, session_id=session_id)
        session = Session(ctx, runners, out, recorder=runtime.recorder, metrics=runtime.port,
                          monotonic=runtime.monotonic)
        runtime.live[session_id] = session
        return OpenSession(session=session, runtime=runtime)

    def _voice(self, profile: AgentProfile) -> VoiceRef:
        if profile.voice is None:
            return DEFAULT_VOICE
        return VoiceRef(voice_profile_id=profile.voice.profile_id, voice_version=profile.voice.version)

    def _tools(self, profile: AgentProfile) -> tuple[ToolDefinition, ...]:
        return tuple(
            ToolDefinition(name=t.name, description=t.description,
                           input_schema={"type": "object"})
            for t in profile.tools if t.action_class != "prohibited"
        )
