"""``POST /v1/telephony/twilio/voice``: the number's Voice webhook (SPEC §10).

The request must carry Twilio's signature over ``--public-url`` + the route and its form
parameters; anything else is refused with 403 and nothing else happens (audited). A signed call
from a number in the identities is answered with TwiML that connects it to the media stream
with a ticket; an unknown number hears a short refusal and is hung up on, with no ticket. The
phone number is never logged or audited in clear (:func:`~.config.phone_ref`).
"""

from __future__ import annotations

import structlog
from starlette.requests import Request
from starlette.responses import Response

from vocero.relay.telephony import twilio
from vocero.relay.telephony.config import TelephonyConfig, phone_ref

log = structlog.get_logger("vocero.telephony")
TWIML = "application/xml"


async def voice(request: Request) -> Response:
    config: TelephonyConfig | None = getattr(request.app.state, "telephony", None)
    if config is None:  # no --twilio-auth-token: the route does not exist
        return Response(status_code=404)
    form = await request.form()
    params = [(name, value) for name, value in form.multi_items() if isinstance(value, str)]
    presented = request.headers.get(twilio.SIGNATURE_HEADER, "")
    query = request.url.query
    url = config.base + twilio.VOICE_PATH + (f"?{query}" if query else "")
    if not presented or not twilio.signature_valid(
        config.auth_token.reveal(), url, params, presented
    ):
        _refused(config, "signature_missing" if not presented else "signature_invalid")
        return Response(status_code=403)
    call_sid = str(form.get("CallSid") or "")
    number = str(form.get("From") or "")
    if not call_sid:
        _refused(config, "call_sid_missing")
        return Response(status_code=400)
    caller = await config.caller_by_phone(number) if number else None
    ref = phone_ref(number)
    if caller is None:
        _refused(config, "unknown_number", call_sid=call_sid, phone_ref=ref)
        return Response(twilio.refusal_twiml(), media_type=TWIML)
    ticket = config.tickets.issue(call_sid, caller)
    if config.accounts is not None:  # a handoff puts the call through on this account
        config.accounts.note(call_sid, str(form.get("AccountSid") or ""))
    config.relay.factory.audit(
        "telephony.call_answered",
        {"call_sid": call_sid, "phone_ref": ref, "tenant_id": caller.tenant,
         "subject_ref": caller.subject_ref},
    )
    log.info("telephony.call_answered", call_sid=call_sid, phone_ref=ref)
    return Response(
        twilio.connect_twiml(config.stream_url, {"ticket": ticket}), media_type=TWIML
    )


def _refused(config: TelephonyConfig, reason: str, **data: str) -> None:
    config.relay.factory.audit("telephony.call_refused", {"reason_code": reason, **data})
    config.relay.metrics.count("denials", reason_code=reason)
    log.warning("telephony.call_refused", reason_code=reason, **data)
