"""The profile's ``handoff`` setting, checked at load (docs/protocol.md "Profile additions").

A ``handoff`` needs a number to dial in E.164 (``+`` then 8 to 15 digits), a ``message`` of one
short line if any, and ``after_denials`` of at least 1. A profile with a ``handoff`` that lists
no tool resolving to ``handoff.request`` gets the built-in one added
(:func:`~vocero.contracts.handoff.handoff_tool`); a profile that lists one without a
``handoff`` is refused: there would be nobody to hand the caller to.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from vocero.contracts.builtins import HANDOFF_TOOL, VOCERO_SERVER
from vocero.contracts.domain import AgentProfile
from vocero.contracts.errors import ConfigError
from vocero.contracts.handoff import E164, MAX_MESSAGE, handoff_tool


def check_handoff(file: Path, profile: AgentProfile) -> None:
    """Raise ``ConfigError`` naming the field for the first problem of ``profile.handoff``."""
    handoff = profile.handoff
    lists_tool = any(
        t.server == VOCERO_SERVER and t.resolves_to == HANDOFF_TOOL for t in profile.tools
    )
    if handoff is None:
        if lists_tool:
            raise ConfigError(str(file), "handoff",
                              f"required by the tool resolving to `{HANDOFF_TOOL}`")
        return
    if not E164.match(handoff.phone):
        raise ConfigError(str(file), "handoff.phone",
                          "must be an E.164 number: + then 8 to 15 digits, no spaces")
    message = handoff.message
    if len(message) > MAX_MESSAGE or any(c in message for c in "\r\n\t"):
        raise ConfigError(str(file), "handoff.message",
                          f"one line of at most {MAX_MESSAGE} characters")
    if handoff.after_denials < 1:
        raise ConfigError(str(file), "handoff.after_denials",
                          f"must be at least 1, got {handoff.after_denials}")


def with_handoff_tool(profile: AgentProfile) -> AgentProfile:
    """``profile`` with the built-in handoff tool listed when its ``handoff`` needs one."""
    if profile.handoff is None or any(
        t.server == VOCERO_SERVER and t.resolves_to == HANDOFF_TOOL for t in profile.tools
    ):
        return profile
    return msgspec.structs.replace(profile, tools=[*profile.tools, handoff_tool()])
