"""Operator API of the voice vault (``/v1/voices``, ADR-0005): create, add versions, approve
(four eyes), revoke, read. Reference audio goes in, never comes out."""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, TypeVar

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from vocero.app.http.bodies import BodyError, decode, from_error, instant, rejected
from vocero.app.http.operator_api import Handler, guarded, json, problem
from vocero.app.http.operators import Operator
from vocero.app.runtime import Runtime
from vocero.voice_vault import VaultError, VoiceVault

CREATORS = frozenset({"admin", "business_owner"})
APPROVERS = frozenset({"admin", "business_owner", "security", "legal"})
REVOKERS = frozenset({"admin", "security", "business_owner"})
READERS = frozenset({"admin", "business_owner", "security", "legal"})

MAX_BODY = 6 * 1024 * 1024
"""A base64 WAV of 30 s at 48 kHz is about 3.9 MB."""

STATUS_OF: dict[str, int] = {
    "voice_not_found": 404,
    "version_not_found": 404,
    "role_not_allowed": 403,
    "already_exists": 409,
    "already_approved": 409,
    "same_operator": 409,
    "same_role": 409,
    "voice_revoked": 409,
    "voice_expired": 409,
}
"""HTTP status of each vault refusal; every other code is a 400."""
FIELD_OF: dict[str, str] = {
    "invalid_wav": "ref_audio",
    "invalid_ref_text": "ref_text",
    "invalid_usage_until": "usage_until",
    "invalid_reason": "reason",
    "invalid_engine_voice": "engine_voice",
}
"""The body member a 400 refusal of the vault is about (``invalid_voice`` names its own)."""

T = TypeVar("T")
Text = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]
Language = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$")]


class CreateVoice(msgspec.Struct, forbid_unknown_fields=True):
    voice_id: Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")]
    tenant: Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
    owner: Text
    purpose: Annotated[str, msgspec.Meta(min_length=1, max_length=2_000)]
    languages: Annotated[list[Language], msgspec.Meta(min_length=1, max_length=16)]
    usage_until: Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
    """RFC 3339 date-time with an offset, or a date: the end of that day in UTC
    (docs/operators.md "Operator bodies")."""
    consent_ref: Text


class AddVersion(msgspec.Struct, forbid_unknown_fields=True):
    ref_audio: Annotated[str, msgspec.Meta(min_length=1)]
    ref_text: Annotated[str, msgspec.Meta(min_length=1, max_length=2_000)]
    engine_voice: Annotated[str, msgspec.Meta(max_length=64)] = ""
    """The serving engine's voice name this version is spoken with on a remote TTS, approved
    with the version (SPEC §3); without it a remote TTS cannot speak the version."""


class Revoke(msgspec.Struct, forbid_unknown_fields=True):
    reason: Annotated[str, msgspec.Meta(min_length=1, max_length=500)]


class BodyTooLarge(Exception):
    """The body is over :data:`MAX_BODY` (413, not a 400)."""


async def create_voice(request: Request, runtime: Runtime, operator: Operator) -> Response:
    body = await _body(request, CreateVoice)
    if not operator.scope.allows(body.tenant):
        return problem(403, "tenant_not_allowed")
    voice = await _vault(runtime).create_voice(
        voice_id=body.voice_id, tenant=body.tenant, owner=body.owner, purpose=body.purpose,
        languages=body.languages, usage_until=instant(body.usage_until, "usage_until"),
        consent_ref=body.consent_ref,
        created_by=operator.name,
    )
    return json(voice, status=201)


async def add_version(request: Request, runtime: Runtime, operator: Operator) -> Response:
    body = await _body(request, AddVersion)
    await _visible(runtime, operator, request.path_params["voice_id"])
    try:
        audio = base64.b64decode(body.ref_audio, validate=True)
    except (binascii.Error, ValueError):
        raise VaultError("invalid_wav", "ref_audio is not base64") from None
    version = await _vault(runtime).add_version(
        request.path_params["voice_id"], audio, body.ref_text, operator.name,
        engine_voice=body.engine_voice,
    )
    return json(version, status=201)


async def approve(request: Request, runtime: Runtime, operator: Operator) -> Response:
    await _visible(runtime, operator, request.path_params["voice_id"])
    version = await _vault(runtime).approve(
        request.path_params["voice_id"], request.path_params["version"], operator.name,
        operator.roles,
    )
    return json(version)


async def revoke(request: Request, runtime: Runtime, operator: Operator) -> Response:
    body = await _body(request, Revoke)
    await _visible(runtime, operator, request.path_params["voice_id"])
    voice = await _vault(runtime).revoke(request.path_params["voice_id"], body.reason,
                                         operator.name)
    return json(voice)


async def get_voice(request: Request, runtime: Runtime, operator: Operator) -> Response:
    voice = await _vault(runtime).get(request.path_params["voice_id"])
    if voice is None or not operator.scope.allows(voice.tenant):
        return problem(404, "voice_not_found")
    return json(voice)


async def _visible(runtime: Runtime, operator: Operator, voice_id: str) -> None:
    """Refuse (``voice_not_found``, a 404) a voice of a tenant the operator may not act on, as
    if it did not exist."""
    if operator.scope.everywhere:
        return
    voice = await _vault(runtime).get(voice_id)
    if voice is None or not operator.scope.allows(voice.tenant):
        raise VaultError("voice_not_found")


def _refusals(handler: Handler) -> Handler:
    """A rejected body or a vault refusal that is the request's fault answers 400 with
    ``{"error": {"code", "field", "reason"}}`` (docs/operators.md); other refusals keep
    ``{"error": code, "detail": ...}`` with their status (404, 409, 413). Reasons name a field or
    a format problem, never a submitted value."""

    async def endpoint(request: Request, runtime: Runtime, operator: Operator) -> Response:
        try:
            return await handler(request, runtime, operator)
        except BodyTooLarge:
            return problem(413, "body_too_large")
        except BodyError as bad:
            return from_error(bad)
        except VaultError as refused:
            status = STATUS_OF.get(refused.code, 400)
            if status == 400:
                field = FIELD_OF.get(refused.code, refused.detail)
                return rejected(refused.code, field, refused.detail or refused.code)
            return _problem(status, refused.code, refused.detail)

    return endpoint


def _problem(status: int, code: str, detail: str) -> Response:
    return json({"error": code, "detail": detail}, status) if detail else problem(status, code)


async def _body(request: Request, kind: type[T]) -> T:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise BodyTooLarge
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise BodyTooLarge
    return decode(raw, kind)


def _vault(runtime: Runtime) -> VoiceVault:
    if runtime.vault is None:
        raise RuntimeError("the voice vault is not configured")
    return runtime.vault


def routes() -> list[Route]:
    def route(path: str, roles: frozenset[str], handler: Handler, method: str) -> Route:
        return Route(path, guarded(roles, _refusals(handler)), methods=[method])

    return [
        route("/v1/voices", CREATORS, create_voice, "POST"),
        route("/v1/voices/{voice_id}", READERS, get_voice, "GET"),
        route("/v1/voices/{voice_id}/versions", CREATORS, add_version, "POST"),
        route("/v1/voices/{voice_id}/versions/{version:int}/approvals", APPROVERS, approve,
              "POST"),
        route("/v1/voices/{voice_id}/revoke", REVOKERS, revoke, "POST"),
    ]
