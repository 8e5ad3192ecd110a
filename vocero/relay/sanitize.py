"""``session.update_requested.v1``: apply the allowed preferences, strip governed fields.

Effective configuration is computed from platform defaults, the profile and the identity; the
client may only choose among allowed preferences. Anything that could replace the voice, the
tools, the instructions, limits, scopes or credentials is removed and reported with a coded reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import langcodes
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
MAX_LOCALE_CHARS = 35
"""A longer ``preferences.locale`` is refused (docs/protocol.md "Configuration updates"; RFC
5646 suggests 35 as enough)."""
RUNNER_LANGUAGES = frozenset({"en"})
"""Languages every built-in runner set (sim, cpu, gb10) transcribes and speaks."""
_TAG_SYNTAX = re.compile(r"[A-Za-z]{2,8}(?:-[A-Za-z0-9]{1,8})*")


@dataclass(frozen=True, slots=True)
class Sanitized:
    locale: str | None
    turn_mode: str | None
    supports_playout_ack: bool | None
    rejected: list[ev.RejectedField]


def supported_locale(tag: str, profile_locale: str) -> str | None:
    """The canonical form of ``tag`` (``EN-gb`` -> ``en-GB``) when it is a valid BCP 47 tag of
    at most 35 characters in a language both the profile (its own locale's language) and the
    runners speak; ``None`` otherwise. The profile's own locale is always supported."""
    if len(tag) > MAX_LOCALE_CHARS or not _TAG_SYNTAX.fullmatch(tag):
        return None
    if not langcodes.tag_is_valid(tag):
        return None
    canonical = langcodes.standardize_tag(tag)
    if canonical.lower() == profile_locale.lower():
        return profile_locale
    language = langcodes.Language.get(canonical).language
    profile_language = langcodes.Language.get(profile_locale).language
    if language != profile_language or language not in RUNNER_LANGUAGES:
        return None
    return canonical


def sanitize(update: ev.UpdateRequested, *, profile_locale: str = "en-US") -> Sanitized:
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
            locale = supported_locale(prefs.locale, profile_locale)
            if locale is None:
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
