"""Valid client events, handed to the session (``docs/protocol.md``, "Configuration updates").

Each event the envelope rules accepted goes to one handler of the session; the handlers never
await, so a barge-in's stop is queued before the handler returns
(``docs/adr/0008-priority-control-lane.md``). A ``session.update_requested.v1`` is applied here:
the allowed preferences are kept, governed fields stripped (:func:`sanitize`), the new
configuration announced, and every difference audited, repeats coalesced (``docs/security.md``).
"""

from __future__ import annotations

import dataclasses

import msgspec

from vocero.contracts import events as ev
from vocero.contracts.errors import CloseCode
from vocero.orchestrator.context import SessionContext
from vocero.orchestrator.output import OutFrame, OutputChannel
from vocero.relay.limits import AuditCoalescer
from vocero.relay.outbound import OutboundPump
from vocero.relay.ports import SessionFactory, SessionHandle
from vocero.relay.sanitize import sanitize


class UpdateAudit:
    """Audits what each configuration update changed or refused, coalescing repeats
    (:class:`AuditCoalescer`), and the summary of the repeats once the connection ends."""

    def __init__(self, factory: SessionFactory) -> None:
        self.factory = factory
        self.coalescer = AuditCoalescer()

    def difference(self, difference: dict[str, list[str]], session_id: str) -> None:
        if self.coalescer.admit(tuple(tuple(v) for v in difference.values())):
            self.factory.audit(
                "session.configuration_applied", dict(difference), session_id=session_id
            )

    def summarise(self, session_id: str) -> None:
        """The summary of coalesced updates, once the connection ends (before its close frame
        is sent, so that whoever saw the close finds the summary audited)."""
        summary = self.coalescer.take_summary()
        if summary is not None:
            self.factory.audit("session.configuration_coalesced", summary, session_id=session_id)


class Dispatcher:
    """Hands one connection's valid client events to its session and applies its updates."""

    def __init__(
        self,
        handle: SessionHandle,
        out: OutputChannel,
        outbound: OutboundPump,
        audit: UpdateAudit,
    ) -> None:
        self.handle = handle
        self.session = handle.session
        self.session_id = self.session.ctx.session_id
        self.out = out
        self.outbound = outbound
        self.audit = audit
        self.client_closed = False
        """Whether the client closed the session (``session.close.v1``): it is not resumable."""

    def announce(self, rejected: list[ev.RejectedField]) -> None:
        """Queue ``session.configuration_applied.v1`` with the configuration in effect."""
        applied = ev.ConfigurationApplied(
            session_id=self.session_id,
            resume_token=self.handle.resume_token.reveal(),
            effective=self.session.ctx.effective,
            rejected_fields=rejected,
        )
        self.out.control(OutFrame(payload=applied))

    def dispatch(self, event: ev.ClientEvent) -> bool:
        """Hand one valid event to the session. True when the client closed the session."""
        session = self.session
        match event:
            case ev.AudioInputDeltaV1():
                session.on_audio(event.data.payload.audio)
            case ev.OutputPlayoutProgressV1():
                p = event.data.payload
                session.on_playout(p.generation_id, p.played_ms)
            case ev.InputSpeechStartedV1():
                session.on_speech_hint()
            case ev.AudioInputCommitV1():
                session.on_commit()
            case ev.InputTextV1():
                session.on_text(event.data.payload.text)
            case ev.GenerationCancelRequestedV1():
                session.on_cancel(event.data.payload.generation_id)
            case ev.ToolConfirmationSubmittedV1():
                c = event.data.payload
                session.on_confirmation(c.proposal_id, c.revision, c.decision)
            case ev.SessionUpdateRequestedV1():
                self._update(event.data.payload)
            case ev.SessionCloseV1():
                self.client_closed = True
                session.close()
                self.outbound.close_after_drain(CloseCode.NORMAL)
                return True
        return False

    def _update(self, update: ev.UpdateRequested) -> None:
        session = self.session
        result = sanitize(update, profile_locale=session.ctx.profile.locale)
        effective = session.ctx.effective
        changes: dict[str, str] = {}
        if result.locale is not None:
            changes["locale"] = result.locale
        if result.turn_mode is not None:
            changes["turn_mode"] = result.turn_mode
            session.set_turn_mode(result.turn_mode)
        if result.supports_playout_ack is not None:
            self.out.playout_acks = self.out.playout_acks or result.supports_playout_ack
        if changes:
            effective = msgspec.structs.replace(effective, **changes)
            session.ctx = _with_effective(session.ctx, effective)
            self.handle.applied(effective)
        if result.rejected or changes:
            difference = {
                "applied": sorted(changes),
                "rejected": [r.field for r in result.rejected],
                "reasons": [r.reason for r in result.rejected],
            }
            self.audit.difference(difference, self.session_id)
        self.announce(result.rejected)


def _with_effective(ctx: SessionContext, effective: ev.Effective) -> SessionContext:
    return dataclasses.replace(ctx, effective=effective)
