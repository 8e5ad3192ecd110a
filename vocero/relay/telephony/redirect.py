"""Putting a live Twilio call through to a person (docs/telephony.md "Handing a caller to a
person"): :class:`TwilioRedirect` implements :class:`~vocero.contracts.handoff.CallTransfer`.

Twilio's REST API updates a live call with new TwiML:
``POST {api_base}/2010-04-01/Accounts/{AccountSid}/Calls/{CallSid}.json`` with the form field
``Twiml=<Response><Dial>+number</Dial></Response>``, HTTP basic auth ``AccountSid:auth token``.
The media stream then stops and the carrier dials the number. The ``AccountSid`` of a call is
the one its Voice webhook named (:class:`AccountBook`, noted by the webhook); ``--twilio-api-base``
points elsewhere for tests. One request, no retry: a refused or unreachable API raises
:class:`~vocero.contracts.handoff.TransferFailed` with a reason code and the caller is told.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import OrderedDict

import httpx
import structlog

from vocero.contracts.handoff import E164, TransferFailed
from vocero.contracts.secrets import Secret

log = structlog.get_logger("vocero.telephony")

API_BASE = "https://api.twilio.com"
TIMEOUT_S = 10.0
MAX_CALLS = 10_000
"""Calls whose AccountSid is remembered; the oldest is forgotten past it."""


class AccountBook:
    """The ``AccountSid`` each call's webhook named, by ``CallSid`` (bounded, in memory: the
    call's stream reaches the worker that answered its webhook, docs/telephony.md)."""

    def __init__(self, default: str = "") -> None:
        self.default = default
        self._calls: OrderedDict[str, str] = OrderedDict()

    def note(self, call_sid: str, account_sid: str) -> None:
        if not call_sid or not account_sid:
            return
        self._calls[call_sid] = account_sid
        self._calls.move_to_end(call_sid)
        while len(self._calls) > MAX_CALLS:
            self._calls.popitem(last=False)

    def of(self, call_sid: str) -> str:
        return self._calls.get(call_sid, self.default)


def dial_twiml(number: str) -> str:
    """``<Response><Dial>+number</Dial></Response>``."""
    response = ET.Element("Response")
    ET.SubElement(response, "Dial").text = number
    return ET.tostring(response, encoding="unicode")


def call_url(api_base: str, account_sid: str, call_sid: str) -> str:
    return f"{api_base.rstrip('/')}/2010-04-01/Accounts/{account_sid}/Calls/{call_sid}.json"


class TwilioRedirect:
    """Redirects a live call to a number with Twilio's REST API."""

    def __init__(
        self,
        auth_token: Secret,
        accounts: AccountBook,
        *,
        api_base: str = API_BASE,
        timeout_s: float = TIMEOUT_S,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._auth_token = auth_token
        self.accounts = accounts
        self.api_base = api_base
        self._timeout_s = timeout_s
        self._transport = transport

    async def transfer(self, call_sid: str, number: str) -> None:
        if not E164.match(number):
            raise TransferFailed("number_invalid")
        account_sid = self.accounts.of(call_sid)
        if not account_sid or not call_sid:
            raise TransferFailed("account_unknown")
        url = call_url(self.api_base, account_sid, call_sid)
        try:
            async with httpx.AsyncClient(timeout=self._timeout_s,
                                         transport=self._transport) as client:
                response = await client.post(
                    url, data={"Twiml": dial_twiml(number)},
                    auth=(account_sid, self._auth_token.reveal()),
                )
        except httpx.HTTPError as exc:
            log.warning("telephony.transfer_unreachable", error=type(exc).__name__)
            raise TransferFailed("carrier_unreachable") from None
        if response.status_code >= 300:
            log.warning("telephony.transfer_refused", status=response.status_code)
            raise TransferFailed("carrier_refused", response.status_code)
        log.info("telephony.transfer_requested", call_sid=call_sid)
