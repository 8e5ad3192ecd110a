"""``session.update_requested.v1``: apply the allowed preferences, strip governed fields.

Effective configuration is computed from platform defaults, the profile and the identity; the
client may only choose among allowed preferences. Anything that could replace the voice, the
tools, the instructions, limits, scopes or credentials is removed and reported with a coded reason.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from vocero.contracts import events as ev

REASONS: dict[str, str] = {
    "system_prompt": "instructions_governed_by_profile",
    "instructions": "instructions_governed_by_profile",
    "tools": "tools_governed_by_profile",
    "mcp_credentials": "credentials_never_accepted_from_client",
    "ref_audio": "voice_governed_by_vault",
    "ref_text": "voice_governed_by_vault",
    "voice_profile_id": "voice_governed_by_profile",
    "voice_version": "voice_governed_by_profile",
    "limits": "limits_governed_by_platform",
    "scopes": "scopes_governed_by_identity",
}
SUPPORTED_LOCALE_PREFIXES = ("en",)


@dataclass(frozen=True, slots=True)
class Sanitized:
    locale: str | None
    turn_mode: str | None
    supports_playout_ack: bool | None
    rejected: list[ev.RejectedField]


def sanitize(update: ev.UpdateRequested) -> Sanitized:
    rejected = [
        ev.RejectedField(field=name, reason=REASONS[name])
        for name in ev.GOVERNED_FIELDS
        if getattr(update, name) is not msgspec.UNSET
    ]
    locale: str | None = None
    turn_mode: str | None = None
    prefs = update.preferences
    if isinstance(prefs, ev.Preferences):
        rejected += [
            ev.RejectedField(field=f"preferences.{name}", reason=REASONS[name])
            for name in ev.GOVERNED_FIELDS
            if getattr(prefs, name) is not msgspec.UNSET
        ]
        if isinstance(prefs.locale, str):
            if prefs.locale.lower().startswith(SUPPORTED_LOCALE_PREFIXES):
                locale = prefs.locale
            else:
                rejected.append(
                    ev.RejectedField(field="preferences.locale", reason="locale_not_supported")
                )
        if isinstance(prefs.turn_mode, str):
            turn_mode = prefs.turn_mode
    caps = update.client_capabilities
    acks = caps.supports_playout_ack if isinstance(caps, ev.ClientCapabilities) else None
    return Sanitized(
        locale=locale, turn_mode=turn_mode, supports_playout_ack=acks, rejected=rejected
    )
