"""Wiring of the built-in call tool ``carrier.call`` (docs/followups.md "Call-backs through the
carrier"): over the follow-up store and the profiles, and, with ``--twilio-account-sid``,
``--twilio-auth-token`` and ``--public-url``, Twilio's REST client at ``--twilio-api-base``.
Without them the tool exists but refuses every call (``carrier_not_configured``), so a profile
that names it loads and its follow-ups are refused with a reason, never silently kept."""

from __future__ import annotations

from vocero.app.settings import Settings
from vocero.contracts.clock import SystemClock
from vocero.contracts.ports import Clock
from vocero.followups.carrier_call import AuditSink, CarrierCallTools, DialBook
from vocero.followups.ports import ProfileLookup
from vocero.relay.telephony.outbound import TwilioCalls


def carrier_call_tools(
    settings: Settings,
    store: DialBook,
    *,
    profiles: ProfileLookup,
    audit: AuditSink,
    clock: Clock | None = None,
) -> CarrierCallTools:
    placer: TwilioCalls | None = None
    if settings.twilio_auth_token and settings.twilio_account_sid and settings.public_url:
        placer = TwilioCalls(settings.twilio_account_sid, settings.twilio_auth_token,
                             public_url=settings.public_url, api_base=settings.twilio_api_base)
    return CarrierCallTools(store, clock or SystemClock(), placer=placer, profiles=profiles,
                            audit=audit, from_number=settings.twilio_from)
