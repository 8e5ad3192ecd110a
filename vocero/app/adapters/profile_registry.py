"""The profiles new sessions get: the directory's files, versioned in the store, rolled back
without a restart (ADR-0023; docs/runbooks/rollback.md).

Before a session is admitted, :meth:`ProfileRegistry.refresh` looks at the profile directory
(a changed file is an edit: it is checked, stored as a new revision and made the head) and
reads every profile's head from the store (a rollback by ``vocero profiles rollback`` in
another process, or by the operator API, is seen by the next session). A file that no longer
loads changes nothing: the current revision keeps serving and the problem is logged and
counted. A session keeps the profile object it was admitted with, so a rollback never changes
a live session.
"""

from __future__ import annotations

import getpass
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import anyio
import structlog

from vocero.contracts.domain import AgentProfile, Caller
from vocero.contracts.errors import ConfigError
from vocero.identity.profile_snapshots import Snapshot, from_snapshot, read_snapshot
from vocero.identity.profiles import ProfileCatalog, version_key
from vocero.store.audit import AuditLog
from vocero.store.profiles import ProfileVersions, Revision

log = structlog.get_logger("vocero.profiles")

CatalogSync = Callable[[AgentProfile], Awaitable[None]]
Signature = tuple[tuple[str, int, int], ...]


def loader_name() -> str:
    """Who loaded a profile from files: the account running the process."""
    try:
        return f"files:{getpass.getuser()}"
    except (KeyError, OSError):
        return "files"


class ProfileRegistry:
    """Head revision of every profile, as a :class:`ProfileCatalog`, kept in step with the
    directory and the store."""

    def __init__(
        self, directory: Path, versions: ProfileVersions, audit: AuditLog, *,
        on_change: CatalogSync | None = None, on_failure: Callable[[], None] | None = None,
        on_rollback: Callable[[], None] | None = None,
    ) -> None:
        """``on_change``: a profile's head moved (its catalog is synced there);
        ``on_failure``: an edit did not load; ``on_rollback``: a rollback was seen."""
        self._directory = directory
        self._versions = versions
        self._audit = audit
        self._on_change = on_change
        self._on_failure = on_failure
        self._on_rollback = on_rollback
        self._signature: Signature = ()
        self._watched: set[str] = set()
        self._files: dict[tuple[str, str], AgentProfile] = {}
        self._loaded: dict[tuple[str, int], AgentProfile] = {}
        self._current = ProfileCatalog(())
        self._heads: dict[str, int] = {}
        self._lock = anyio.Lock()

    # ----------------------------------------------------------------- the catalog's face

    def __iter__(self) -> Iterator[AgentProfile]:
        return iter(self._current)

    def __len__(self) -> int:
        return len(self._current)

    def select(self, caller: Caller) -> AgentProfile:
        return self._current.select(caller)

    def get(self, profile_id: str, version: str | None = None) -> AgentProfile | None:
        """A profile by id and declared version: the head if it matches, else any revision
        this process has loaded (sessions started on an older version still find it)."""
        head = self._current.get(profile_id, version)
        if head is not None:
            return head
        known = [p for (pid, _), p in sorted(self._loaded.items()) if pid == profile_id]
        known += [p for (pid, _), p in self._files.items() if pid == profile_id]
        found = [p for p in known if version is None or p.version == version]
        return max(found, key=lambda p: version_key(p.version), default=None)

    def revision(self, profile_id: str) -> int | None:
        return self._heads.get(profile_id)

    # ----------------------------------------------------------------- keeping in step

    async def start(self) -> None:
        """Load the directory (a problem raises :class:`ConfigError`) and the heads."""
        async with self._lock:
            await self._load_files(strict=True)
            await self._read_heads()

    async def select_fresh(self, caller: Caller) -> AgentProfile:
        """:meth:`select` after :meth:`refresh`: what a new session gets."""
        await self.refresh()
        return self.select(caller)

    async def refresh(self) -> None:
        async with self._lock:
            if self._directory_signature() != self._signature:
                await self._load_files(strict=False)
            await self._read_heads()

    async def _load_files(self, *, strict: bool) -> None:
        try:
            snapshots = _read_directory(self._directory)
        except ConfigError as exc:
            if strict:
                raise
            self._signature = self._directory_signature()
            log.warning("profiles.reload_failed", file=exc.path, field=exc.field,
                        problem=exc.problem)
            if self._on_failure is not None:
                self._on_failure()
            return
        self._files = {(s.profile.id, s.profile.version): s.profile for s in snapshots}
        self._watched = {path for s in snapshots for path in s.data["documents"]}
        self._signature = self._directory_signature()
        by = loader_name()
        for snapshot in _newest_per_id(snapshots):
            profile = snapshot.profile
            revision, moved = await self._versions.loaded(
                profile.id, profile.version, snapshot.content_hash, snapshot.data, by=by)
            self._loaded[(profile.id, revision.revision)] = profile
            if moved:
                await self._audit.record("profile.loaded", _fields(revision), actor=by)
                log.info("profiles.loaded", profile_id=profile.id, version=profile.version,
                         revision=revision.revision)

    async def _read_heads(self) -> None:
        heads: dict[str, int] = {}
        profiles: list[AgentProfile] = []
        rolled: set[str] = set()
        present = {profile_id for profile_id, _ in self._files}
        for head, revision in await self._versions.heads():
            if revision.profile_id not in present:  # its file was removed: not served
                continue
            if head.reason == "rollback":
                rolled.add(head.profile_id)
            profile = self._loaded.get((revision.profile_id, revision.revision))
            if profile is None:
                profile = from_snapshot(revision.snapshot)
                self._loaded[(revision.profile_id, revision.revision)] = profile
            heads[revision.profile_id] = revision.revision
            profiles.append(profile)
        changed = [p for p in profiles if self._heads.get(p.id) != heads[p.id]]
        first = not self._heads
        self._heads = heads
        self._current = ProfileCatalog(profiles)
        for profile in changed:
            if self._on_change is not None:
                await self._on_change(profile)
            if profile.id in rolled and not first and self._on_rollback is not None:
                self._on_rollback()

    def _directory_signature(self) -> Signature:
        paths = {str(p) for p in self._directory.glob("*.yaml")} | self._watched
        return tuple(sorted(_stat(path) for path in paths))


def _stat(path: str) -> tuple[str, int, int]:
    try:
        found = Path(path).stat()
    except OSError:
        return (path, -1, -1)
    return (path, found.st_mtime_ns, found.st_size)


def _read_directory(directory: Path) -> list[Snapshot]:
    """Every profile of the directory, checked as ``load_profiles`` checks them."""
    from vocero.identity.profiles import load_profiles

    load_profiles(directory)  # whole-directory checks: unique id@version, non-empty
    return [read_snapshot(file) for file in sorted(directory.glob("*.yaml"))]


def _newest_per_id(snapshots: list[Snapshot]) -> list[Snapshot]:
    """The file of each profile id that selection would pick: its highest declared version."""
    best: dict[str, Snapshot] = {}
    for snapshot in snapshots:
        held = best.get(snapshot.profile.id)
        if held is None or version_key(snapshot.profile.version) > version_key(
                held.profile.version):
            best[snapshot.profile.id] = snapshot
    return list(best.values())


def _fields(revision: Revision) -> dict[str, object]:
    return {"profile_id": revision.profile_id, "revision": revision.revision,
            "version": revision.version, "content_hash": revision.content_hash}
