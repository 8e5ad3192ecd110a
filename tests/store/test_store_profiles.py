"""Profile versions loaded by workers that start together on one database (``--workers 2``,
several nodes): each content is one revision, the head moves once, and no worker fails its
start on the other's insert (a unique-key race on PostgreSQL before the fix)."""

from __future__ import annotations

import anyio
import pytest

from vocero.store import Store
from vocero.store.profiles import ProfileVersions

pytestmark = pytest.mark.anyio


async def test_workers_loading_the_same_profiles_at_once_share_one_revision_each(
    db_url: str,
) -> None:
    stores = [Store.open(db_url), Store.open(db_url)]
    results: dict[str, list[tuple[int, bool]]] = {}
    ids = [f"profile-{n}" for n in range(8)]
    try:

        async def load(versions: ProfileVersions, profile_id: str) -> None:
            revision, moved = await versions.loaded(
                profile_id, "1", f"hash-of-{profile_id}", {"id": profile_id}, by="worker"
            )
            results.setdefault(profile_id, []).append((revision.revision, moved))

        async with anyio.create_task_group() as tg:
            for profile_id in ids:
                for store in stores:
                    tg.start_soon(load, ProfileVersions(store), profile_id)
    finally:
        for store in stores:
            await store.close()
    assert sorted(results) == ids
    for profile_id, answers in results.items():
        assert [revision for revision, _ in answers] == [1, 1], (profile_id, answers)
        assert sorted(moved for _, moved in answers) == [False, True], (profile_id, answers)
