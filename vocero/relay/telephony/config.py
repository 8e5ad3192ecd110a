"""What the phone leg needs from the rest of the process, wired by the composition root."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from vocero.contracts.domain import Caller
from vocero.contracts.secrets import Secret
from vocero.relay.ports import RelayConfig
from vocero.relay.telephony.carrier import CarrierProtocol
from vocero.relay.telephony.redirect import AccountBook
from vocero.relay.telephony.tickets import Admitted, TicketBook
from vocero.relay.telephony.twilio import STREAM_PATH, TwilioStream


@dataclass(slots=True)
class TelephonyConfig:
    relay: RelayConfig
    """The sessions, profiles, slots and metrics of ``/v1/realtime``: a call is a session like
    any other."""
    auth_token: Secret
    """The carrier account's auth token: the webhook's signature key (``--twilio-auth-token``)."""
    public_url: str
    """The https base the carrier reaches (``--public-url``); signatures are computed over it."""
    caller_by_phone: Callable[[str], Awaitable[Caller | None]]
    tickets: TicketBook
    carrier: CarrierProtocol = field(default_factory=TwilioStream)
    start_timeout_s: float = 10.0
    """How long an accepted stream may take to send its ``start``."""
    accounts: AccountBook | None = None
    """Where the webhook notes each call's ``AccountSid``, for a handoff's transfer
    (:mod:`.redirect`)."""
    callback_of: Callable[[str, str], Awaitable[Admitted | None]] | None = None
    """A call-back's answered call (the webhook's ``?followup=<id>`` and the ``To`` it rang):
    the caller it rang, the follow-up and the agent's first line; ``None``: not a call-back
    Vocero placed to that number (docs/followups.md "Call-backs through the carrier")."""

    @property
    def base(self) -> str:
        return self.public_url.rstrip("/")

    @property
    def stream_url(self) -> str:
        """Where the carrier opens the media stream: ``wss://`` (``ws://`` for an http base)."""
        scheme, _, rest = self.base.partition("://")
        return ("ws" if scheme == "http" else "wss") + "://" + rest + STREAM_PATH


def phone_ref(number: str) -> str:
    """A phone number as logs and audit may hold it: a digest prefix, never the number."""
    digits = "".join(c for c in number if c.isdigit() or c == "+")
    return "tel_" + hashlib.sha256(digits.encode()).hexdigest()[:16]
