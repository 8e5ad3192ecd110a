"""Ringing a caller back through Twilio (docs/followups.md "Call-backs through the carrier"):
:class:`TwilioCalls` implements :class:`~vocero.contracts.carrier_calls.CallPlacer`.

``POST {api_base}/2010-04-01/Accounts/{AccountSid}/Calls.json`` with the form fields ``To``,
``From``, ``Url`` (the deployment's Voice webhook with ``?followup=<id>``: the answered call is
signed and connected like an inbound one) and ``Method=POST``, HTTP basic auth
``AccountSid:auth token``. HTTP 201 with a call ``sid`` is a placed call. One request, no retry:
429 and 5xx (and an API that could not be reached: nothing was created) are ``busy``; any other
answer is a refusal; a timeout may have created the call (``unknown``). The caller's number is
never logged.
"""

from __future__ import annotations

from urllib.parse import urlencode

import httpx
import structlog

from vocero.contracts.carrier_calls import FOLLOWUP_PARAMETER, CallNotPlaced, PlacedCall
from vocero.contracts.handoff import E164
from vocero.contracts.secrets import Secret
from vocero.relay.telephony.redirect import API_BASE
from vocero.relay.telephony.twilio import VOICE_PATH

log = structlog.get_logger("vocero.telephony")

TIMEOUT_S = 10.0


def calls_url(api_base: str, account_sid: str) -> str:
    return f"{api_base.rstrip('/')}/2010-04-01/Accounts/{account_sid}/Calls.json"


def answer_url(public_url: str, followup_id: str) -> str:
    """The Voice webhook an answered call-back requests (signed over this whole URL)."""
    return (public_url.rstrip("/") + VOICE_PATH + "?"
            + urlencode({FOLLOWUP_PARAMETER: followup_id}))


class TwilioCalls:
    """Creates outbound calls with Twilio's REST API."""

    def __init__(
        self,
        account_sid: str,
        auth_token: Secret,
        *,
        public_url: str,
        api_base: str = API_BASE,
        timeout_s: float = TIMEOUT_S,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.account_sid = account_sid
        self._auth_token = auth_token
        self.public_url = public_url
        self.api_base = api_base
        self._timeout_s = timeout_s
        self._transport = transport

    async def place(self, *, to: str, from_: str, followup_id: str) -> PlacedCall:
        if not E164.match(to):
            raise CallNotPlaced("number_invalid")
        if not E164.match(from_):
            raise CallNotPlaced("from_number_missing")
        if not self.account_sid or not self.public_url:
            raise CallNotPlaced("carrier_not_configured")
        form = {"To": to, "From": from_, "Url": answer_url(self.public_url, followup_id),
                "Method": "POST"}
        try:
            async with httpx.AsyncClient(timeout=self._timeout_s,
                                         transport=self._transport) as client:
                response = await client.post(calls_url(self.api_base, self.account_sid),
                                             data=form,
                                             auth=(self.account_sid, self._auth_token.reveal()))
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:  # nothing reached the API
            log.warning("telephony.call_unreachable", error=type(exc).__name__)
            raise CallNotPlaced("carrier_unreachable", busy=True) from None
        except httpx.HTTPError as exc:  # sent, answer lost: the call may exist
            log.warning("telephony.call_outcome_unknown", error=type(exc).__name__)
            raise CallNotPlaced("carrier_outcome_unknown", unknown=True) from None
        status = response.status_code
        if status == 429 or status >= 500:
            log.warning("telephony.call_busy", status=status)
            raise CallNotPlaced("carrier_busy", status=status, busy=True)
        sid = _sid(response) if status == 201 else ""
        if not sid:
            log.warning("telephony.call_refused", status=status)
            raise CallNotPlaced("carrier_refused", status=status)
        log.info("telephony.call_placed", call_sid=sid, followup_id=followup_id)
        return PlacedCall(call_sid=sid, status=str(_field(response, "status")))


def _field(response: httpx.Response, name: str) -> object:
    try:
        body = response.json()
    except ValueError:
        return ""
    return body.get(name, "") if isinstance(body, dict) else ""


def _sid(response: httpx.Response) -> str:
    sid = _field(response, "sid")
    return sid if isinstance(sid, str) and sid.startswith("CA") else ""
