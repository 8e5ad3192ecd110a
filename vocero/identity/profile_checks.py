"""Cross-field checks on one agent profile and resolution of its stdio server paths.

Type and shape errors are msgspec's job (``config_files.convert``); what is here needs more than
one field at a time: tool names unique, every tool's server declared, built-in tools real, limits
positive (the follow-up queue's too), relative script paths resolved against the profile's own
directory.
"""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec

from vocero.contracts.domain import AgentProfile, FollowupSettings, McpServerSpec, ToolSpec
from vocero.contracts.errors import ConfigError
from vocero.contracts.handoff import E164
from vocero.identity.handoff_checks import check_handoff
from vocero.identity.step_checks import check_steps

VOCERO_SERVER = "vocero"
"""The ``server`` of Vocero's own built-in tools."""

BUILTIN_TOOLS = frozenset({"followups.record", "knowledge.search", "handoff.request",
                           "carrier.call"})
"""Built-in tools a profile may list with ``server: vocero`` (by ``resolves_to``)."""

PYTHON_COMMANDS = frozenset({"python", "python3"})
"""Commands that run with Vocero's own interpreter, so fixture servers share its packages."""


def check_profile(file: Path, profile: AgentProfile) -> None:
    """Raise ``ConfigError`` for the first cross-field problem of ``profile``."""
    _check_identity(file, profile)
    _check_limits(file, profile)
    for name, server in profile.mcp_servers.items():
        _check_server(file, name, server)
    seen: dict[str, int] = {}
    for index, tool in enumerate(profile.tools):
        first = seen.setdefault(tool.name, index)
        if first != index:
            raise ConfigError(
                str(file), f"tools[{index}].name", f"duplicate of tools[{first}].name"
            )
        _check_tool(file, f"tools[{index}]", tool, profile)
    check_steps(file, profile)
    check_handoff(file, profile)


def resolve_servers(file: Path, servers: dict[str, McpServerSpec]) -> dict[str, McpServerSpec]:
    """Stdio servers with ``./``, ``../`` paths made absolute and ``python`` as this interpreter."""
    return {name: _resolve(file, f"mcp_servers.{name}", spec) for name, spec in servers.items()}


def _check_identity(file: Path, profile: AgentProfile) -> None:
    for field, value in (("id", profile.id), ("version", profile.version)):
        if not value.strip():
            raise ConfigError(str(file), field, "must not be empty")
    if not profile.match.tenant.strip():
        raise ConfigError(str(file), "match.tenant", "must not be empty")


def _check_limits(file: Path, profile: AgentProfile) -> None:
    for field in ("min_interruption_ms", "max_lead_ms", "word_budget"):
        _positive(file, field, getattr(profile, field))
    _check_followups(file, profile.followups)
    _check_vocabulary(file, profile.vocabulary)


MAX_VOCABULARY = 200
MAX_VOCABULARY_ENTRY = 64


def _check_vocabulary(file: Path, vocabulary: list[str]) -> None:
    """A recogniser hint is short phrases, each on one line: a long one is prose, not a term."""
    if len(vocabulary) > MAX_VOCABULARY:
        raise ConfigError(str(file), "vocabulary",
                          f"at most {MAX_VOCABULARY} entries, got {len(vocabulary)}")
    for index, entry in enumerate(vocabulary):
        where = f"vocabulary[{index}]"
        if not entry.strip():
            raise ConfigError(str(file), where, "must not be empty")
        if len(entry) > MAX_VOCABULARY_ENTRY or any(c in entry for c in "\r\n\t"):
            raise ConfigError(str(file), where, f"one phrase on one line, at most "
                              f"{MAX_VOCABULARY_ENTRY} characters")


def _check_followups(file: Path, settings: FollowupSettings) -> None:
    """The follow-up queue's bounds: every cap positive (a zero cap would refuse every
    follow-up), a budget of zero calls allowed, and a caller's share of it a fraction."""
    for field in ("max_per_tick", "max_open_per_caller", "max_per_session"):
        _positive(file, f"followups.{field}", getattr(settings, field))
    if settings.daily_budget < 0:
        raise ConfigError(str(file), "followups.daily_budget",
                          f"must not be negative, got {settings.daily_budget}")
    share = settings.caller_daily_share
    if not 0 < share <= 1:
        raise ConfigError(str(file), "followups.caller_daily_share",
                          f"must be above 0 and at most 1 (a share of daily_budget), got {share}")
    if settings.from_number and not E164.match(settings.from_number):
        raise ConfigError(str(file), "followups.from_number",
                          "must be an E.164 number: + then 8 to 15 digits, no spaces")


def _check_server(file: Path, name: str, server: McpServerSpec) -> None:
    where = f"mcp_servers.{name}"
    if name == VOCERO_SERVER:
        raise ConfigError(str(file), where, f"`{VOCERO_SERVER}` is reserved for built-in tools")
    if bool(server.url) == bool(server.command):
        raise ConfigError(
            str(file), where, "needs exactly one of `url` (HTTP) or `command` (stdio)"
        )
    if server.url and not server.url.startswith(("http://", "https://")):
        raise ConfigError(str(file), f"{where}.url", "must be an http:// or https:// URL")
    _positive(file, f"{where}.max_concurrency", server.max_concurrency)


def _check_tool(file: Path, where: str, tool: ToolSpec, profile: AgentProfile) -> None:
    for field in ("name", "resolves_to"):
        if not getattr(tool, field).strip():
            raise ConfigError(str(file), f"{where}.{field}", "must not be empty")
    _positive(file, f"{where}.timeout_ms", tool.timeout_ms)
    if tool.server == VOCERO_SERVER:
        if tool.resolves_to not in BUILTIN_TOOLS:
            known = ", ".join(sorted(BUILTIN_TOOLS))
            raise ConfigError(
                str(file), f"{where}.resolves_to", f"not a built-in tool (built-ins: {known})"
            )
    elif tool.server not in profile.mcp_servers:
        declared = ", ".join(sorted(profile.mcp_servers)) or "none"
        raise ConfigError(
            str(file),
            f"{where}.server",
            f"unknown server {tool.server!r} (declared: {declared}; or `{VOCERO_SERVER}`)",
        )


def _positive(file: Path, field: str, value: int) -> None:
    if value <= 0:
        raise ConfigError(str(file), field, f"must be positive, got {value}")


def _resolve(file: Path, where: str, spec: McpServerSpec) -> McpServerSpec:
    if not spec.command:
        return spec
    base = file.parent.resolve()
    command = sys.executable if spec.command in PYTHON_COMMANDS else spec.command
    if _is_relative(command):
        command = _existing(file, f"{where}.command", base / command)
    args = [
        _existing(file, f"{where}.args[{i}]", base / arg) if _is_relative(arg) else arg
        for i, arg in enumerate(spec.args)
    ]
    return msgspec.structs.replace(spec, command=command, args=args)


def _is_relative(value: str) -> bool:
    return value.startswith(("./", "../"))


def _existing(file: Path, field: str, path: Path) -> str:
    resolved = path.resolve()
    if not resolved.exists():
        raise ConfigError(str(file), field, f"no such file: {resolved}")
    return str(resolved)
