"""Wiring of the handoff (docs/telephony.md "Handing a caller to a person"): the built-in
``handoff.request`` over the follow-up store, the sessions' channel and the profiles, and, with
``--twilio-auth-token``, the carrier client that puts a call through
(:class:`~vocero.relay.telephony.redirect.TwilioRedirect`, at ``--twilio-api-base``) with the
book of each call's ``AccountSid`` the Voice webhook fills."""

from __future__ import annotations

from dataclasses import dataclass

from vocero.app.settings import Settings
from vocero.contracts.clock import SystemClock
from vocero.followups.handoff import AuditSink, HandoffTools, SessionLookup
from vocero.followups.ports import FollowupStore, ProfileLookup
from vocero.relay.telephony.redirect import AccountBook, TwilioRedirect


@dataclass(frozen=True, slots=True)
class HandoffServices:
    tools: HandoffTools
    accounts: AccountBook | None
    """Where the webhook notes each call's ``AccountSid``; ``None`` without the phone leg."""


def handoff_services(
    settings: Settings,
    store: FollowupStore,
    *,
    sessions: SessionLookup,
    profiles: ProfileLookup,
    audit: AuditSink,
) -> HandoffServices:
    accounts: AccountBook | None = None
    transfer: TwilioRedirect | None = None
    if settings.twilio_auth_token:
        accounts = AccountBook()
        transfer = TwilioRedirect(
            settings.twilio_auth_token, accounts, api_base=settings.twilio_api_base
        )
    tools = HandoffTools(store, SystemClock(), sessions=sessions, profiles=profiles,
                         audit=audit, transfer=transfer)
    return HandoffServices(tools=tools, accounts=accounts)
