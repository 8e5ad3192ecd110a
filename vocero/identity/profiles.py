"""Agent profiles (docs/operators.md "Agent profiles"): one YAML file each, loaded into a catalog
that picks one per caller."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from vocero.contracts.domain import AgentProfile, Caller, McpServerSpec
from vocero.contracts.errors import AuthError, ConfigError, ErrorCode
from vocero.identity.claims import load_claims, read_catalog
from vocero.identity.config_files import ROOT, convert, read_yaml
from vocero.identity.handoff_checks import with_handoff_tool
from vocero.identity.profile_checks import check_profile, resolve_servers


class ProfileCatalog:
    """Every loaded profile; :meth:`select` finds the one that governs a caller's session."""

    def __init__(self, profiles: Iterable[AgentProfile]) -> None:
        self._profiles = tuple(profiles)

    def __iter__(self) -> Iterator[AgentProfile]:
        return iter(self._profiles)

    def __len__(self) -> int:
        return len(self._profiles)

    def get(self, profile_id: str, version: str | None = None) -> AgentProfile | None:
        """A profile by id, and by version when given (else its latest version)."""
        found = [p for p in self._profiles if p.id == profile_id]
        found = [p for p in found if version is None or p.version == version]
        return max(found, key=lambda p: version_key(p.version), default=None)

    def select(self, caller: Caller) -> AgentProfile:
        """The most specific profile matching the caller's tenant and roles.

        A profile naming roles the caller holds beats a tenant-only profile; ties go to the
        profile listing fewer roles, then the smaller id, then the latest version. No match
        raises ``AuthError`` with ``PROFILE_DENIED``.
        """
        candidates = [p for p in self._profiles if _matches(p, caller)]
        if not candidates:
            raise AuthError(
                f"no profile for tenant {caller.tenant!r}", code=ErrorCode.PROFILE_DENIED
            )
        best = min(_rank(p) for p in candidates)
        tied = [p for p in candidates if _rank(p) == best]
        return max(tied, key=lambda p: version_key(p.version))


def load_profiles(directory: str | Path) -> ProfileCatalog:
    """Load every ``*.yaml`` of ``directory``; ``id`` + ``version`` must be unique across files."""
    folder = Path(directory)
    if not folder.is_dir():
        raise ConfigError(str(folder), ROOT, "not a directory")
    files = sorted(folder.glob("*.yaml"))
    if not files:
        raise ConfigError(str(folder), ROOT, "no *.yaml profiles found")
    owners: dict[tuple[str, str], Path] = {}
    profiles = []
    for file in files:
        profile = load_profile(file)
        first = owners.setdefault((profile.id, profile.version), file)
        if first != file:
            problem = f"{profile.id}@{profile.version} is also defined in {first.name}"
            raise ConfigError(str(file), "id", problem)
        profiles.append(profile)
    return ProfileCatalog(profiles)


def load_profile(file: Path, reader: Callable[[Path], Any] = read_yaml) -> AgentProfile:
    """Load and validate one profile file (and its catalog) read with ``reader``; problems
    raise ``ConfigError`` naming the field."""
    data = reader(file)
    if not isinstance(data, dict):
        raise ConfigError(str(file), ROOT, "expected a mapping")
    data = _normalise_versions(data)
    data["mcp_servers"] = _convert_servers(file, data.get("mcp_servers", {}))
    catalog = read_catalog(file, data.pop("claims", None), reader)
    profile = convert(data, AgentProfile, file)
    check_profile(file, profile)
    profile = with_handoff_tool(profile)
    claims = load_claims(catalog, word_budget=profile.word_budget)
    servers = resolve_servers(file, profile.mcp_servers)
    return msgspec.structs.replace(profile, mcp_servers=servers, claims=claims)


def _normalise_versions(data: dict[str, Any]) -> dict[str, Any]:
    """``version: 1`` in YAML is an int; the profile's version is always text."""
    data = dict(data)
    if "version" in data:
        data["version"] = _as_text(data["version"])
    voice = data.get("voice")
    if isinstance(voice, dict) and "version" in voice:
        data["voice"] = {**voice, "version": _as_text(voice["version"])}
    return data


def _as_text(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _convert_servers(file: Path, servers: Any) -> Any:
    """Convert servers one at a time: msgspec hides dict keys (``$.mcp_servers[...]``)."""
    if not isinstance(servers, dict):
        return servers
    return {
        name: convert(spec, McpServerSpec, file, f"mcp_servers.{name}")
        for name, spec in servers.items()
    }


def _matches(profile: AgentProfile, caller: Caller) -> bool:
    if profile.match.tenant != caller.tenant:
        return False
    return not profile.match.roles or not set(profile.match.roles).isdisjoint(caller.roles)


def _rank(profile: AgentProfile) -> tuple[int, int, str]:
    roles = len(profile.match.roles)
    return (0 if roles else 1, roles, profile.id)


def version_key(version: str) -> tuple[tuple[int, Any], ...]:
    """Natural order: ``"2" < "10"``; numeric parts before text parts of the same position."""
    parts = re.findall(r"\d+|[^\d.\-_]+", version)
    return tuple((1, int(p)) if p.isdigit() else (0, p) for p in parts)
