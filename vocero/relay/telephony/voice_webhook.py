"""``POST /v1/telephony/twilio/voice``: the number's Voice webhook (SPEC §10).

The request must carry Twilio's signature over ``--public-url`` + the route and its form
parameters; anything else is refused with 403 and nothing else happens (audited). A signed call
from a number in the identities is answered with TwiML that connects it to the media stream
with a ticket; an unknown number hears a short refusal and is hung up on, with no ticket. The
phone number is never logged or audited in clear (:func:`~.config.phone_ref`).
"""

from __future__ import annotations

from urllib.parse import parse_qsl

import structlog
from starlette.requests import Request
from starlette.responses import Response

from vocero.contracts.carrier_calls import FOLLOWUP_PARAMETER
from vocero.relay.telephony import twilio
from vocero.relay.telephony.config import TelephonyConfig, phone_ref

log = structlog.get_logger("vocero.telephony")
TWIML = "application/xml"
MAX_BODY = 64 * 1024
"""A webhook body longer than this is refused (413) before it is read further."""


async def voice(request: Request) -> Response:
    config: TelephonyConfig | None = getattr(request.app.state, "telephony", None)
    if config is None:  # no --twilio-auth-token: the route does not exist
        return Response(status_code=404)
    body = await _body(request)
    if body is None:
        _refused(config, "body_too_large")
        return Response(status_code=413)
    params = parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True)
    form = dict(params)
    presented = request.headers.get(twilio.SIGNATURE_HEADER, "")
    query = request.url.query
    url = config.base + twilio.VOICE_PATH + (f"?{query}" if query else "")
    if not presented or not twilio.signature_valid(
        config.auth_token.reveal(), url, params, presented
    ):
        _refused(config, "signature_missing" if not presented else "signature_invalid")
        return Response(status_code=403)
    call_sid = form.get("CallSid", "")
    if not call_sid:
        _refused(config, "call_sid_missing")
        return Response(status_code=400)
    followup_id = request.query_params.get(FOLLOWUP_PARAMETER, "")
    if followup_id:  # a call-back Vocero placed: the person it rang answered
        return await _callback(config, call_sid, followup_id, form)
    number = form.get("From", "")
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


async def _callback(
    config: TelephonyConfig, call_sid: str, followup_id: str, form: dict[str, str]
) -> Response:
    """The answered call of a call-back: connected with a ticket that carries the follow-up
    and the agent's first line, when the follow-up is one Vocero rang to this ``To``."""
    number = form.get("To", "")
    ref = phone_ref(number)
    admitted = (await config.callback_of(followup_id, number)
                if config.callback_of is not None and number else None)
    if admitted is None:
        _refused(config, "followup_unknown", call_sid=call_sid, phone_ref=ref,
                 followup_id=followup_id)
        return Response(twilio.refusal_twiml(), media_type=TWIML)
    caller = admitted.caller
    ticket = config.tickets.issue(call_sid, caller, followup_id=followup_id,
                                  opening=admitted.opening)
    if config.accounts is not None:
        config.accounts.note(call_sid, str(form.get("AccountSid") or ""))
    config.relay.factory.audit(
        "telephony.call_answered",
        {"call_sid": call_sid, "phone_ref": ref, "tenant_id": caller.tenant,
         "subject_ref": caller.subject_ref, "followup_id": followup_id,
         "direction": "outbound"},
    )
    log.info("telephony.callback_answered", call_sid=call_sid, phone_ref=ref,
             followup_id=followup_id)
    return Response(
        twilio.connect_twiml(config.stream_url, {"ticket": ticket}), media_type=TWIML
    )


async def _body(request: Request) -> bytes | None:
    """The form body, read up to :data:`MAX_BODY` (``None``: longer; a webhook is ~1 KB)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _refused(config: TelephonyConfig, reason: str, **data: str) -> None:
    config.relay.factory.audit("telephony.call_refused", {"reason_code": reason, **data})
    config.relay.metrics.count("denials", reason_code=reason)
    log.warning("telephony.call_refused", reason_code=reason, **data)
