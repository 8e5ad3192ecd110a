"""What operators see and do with versioned profiles, shared by ``vocero profiles`` and the
operator API (``/v1/profiles``): lists, histories and the audited rollback (ADR-0023)."""

from __future__ import annotations

from typing import Any

from vocero.store.audit import AuditLog
from vocero.store.engine import Store
from vocero.store.profiles import Head, ProfileVersions, Revision, RollbackError

__all__ = ["RollbackError", "history", "listing", "rollback"]


def revision_view(revision: Revision, head: int | None = None) -> dict[str, Any]:
    view: dict[str, Any] = {
        "profile_id": revision.profile_id, "version": revision.version,
        "revision": revision.revision, "content_hash": revision.content_hash,
        "loaded_by": revision.loaded_by, "loaded_at": revision.loaded_at.isoformat(),
        "files": sorted(revision.snapshot.get("documents", {})),
    }
    if head is not None:
        view["active"] = revision.revision == head
    return view


def head_view(head: Head, revision: Revision) -> dict[str, Any]:
    return {**revision_view(revision), "changed_by": head.changed_by,
            "changed_at": head.changed_at.isoformat(), "change": head.reason}


async def listing(store: Store) -> list[dict[str, Any]]:
    """Every profile with the revision new sessions get."""
    return [head_view(head, revision) for head, revision in await ProfileVersions(store).heads()]


async def history(store: Store, profile_id: str) -> list[dict[str, Any]] | None:
    """Every revision of a profile, oldest first, the active one marked (None: unknown)."""
    versions = ProfileVersions(store)
    head = await versions.head(profile_id)
    if head is None:
        return None
    return [revision_view(r, head.revision) for r in await versions.history(profile_id)]


async def rollback(
    store: Store, profile_id: str, version: str, *, actor: str, via: str, reason: str = ""
) -> dict[str, Any]:
    """Make ``version`` (a declared version, or ``rN`` for revision N) what new sessions get,
    and audit who did it. Raises :class:`RollbackError` for an unknown profile or version."""
    revision, previous = await ProfileVersions(store).rollback(profile_id, version, by=actor)
    await AuditLog(store).record(
        "profile.rolled_back",
        {"profile_id": profile_id, "version": revision.version, "revision": revision.revision,
         "content_hash": revision.content_hash, "from_revision": previous, "via": via,
         "reason": reason},
        actor=actor,
    )
    return {**revision_view(revision, revision.revision), "from_revision": previous}
