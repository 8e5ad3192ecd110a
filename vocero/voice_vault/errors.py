"""The vault's one exception: a refusal with a stable, public ``code``.

The codes are what the operator API returns as ``{"error": code}``; they never carry audio,
transcripts or key material.
"""

from __future__ import annotations

from typing import Literal

VaultCode = Literal[
    "invalid_wav",
    "invalid_voice",
    "invalid_usage_until",
    "invalid_ref_text",
    "invalid_engine_voice",
    "invalid_reason",
    "voice_not_found",
    "version_not_found",
    "already_exists",
    "already_approved",
    "same_operator",
    "same_role",
    "role_not_allowed",
    "voice_revoked",
    "voice_expired",
]


class VaultError(Exception):
    """A vault operation was refused; nothing was written."""

    def __init__(self, code: VaultCode, detail: str = "") -> None:
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code: VaultCode = code
        self.detail = detail


class VaultKeyError(Exception):
    """The vault key is missing, malformed or unreadable. The message never holds the key."""
