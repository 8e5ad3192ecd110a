"""A running Vocero (the real composition root, sim runners) for one profile, its callers and a
sim script, each written to ``tmp_path`` as the CLI would read them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from starlette.testclient import TestClient

from tests.support.db import migrated_copy
from vocero.app.server import create_app
from vocero.app.settings import Settings


@contextmanager
def sim_app(
    tmp_path: Path,
    profile: dict[str, Any],
    callers: list[dict[str, Any]],
    script: dict[str, Any],
    **settings: Any,
) -> Iterator[TestClient]:
    """The app serving ``profile`` to ``callers``, ready (runners warm, servers connected)."""
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / f"{profile['id']}.yaml").write_text(yaml.safe_dump(profile))
    identities = tmp_path / "identities.yaml"
    identities.write_text(yaml.safe_dump({"callers": callers}))
    scripted = tmp_path / "script.yaml"
    scripted.write_text(yaml.safe_dump(script))
    configured = Settings(
        runners="sim",
        db=migrated_copy(tmp_path / "vocero.db", driver="sqlite+aiosqlite"),
        sim_script=str(scripted),
        profiles=str(profiles),
        identities=str(identities),
        followups_tick_s=0,
        **settings,
    )
    with TestClient(create_app(configured)) as client:
        assert client.portal is not None
        client.portal.call(client.app.state.runtime.ready.wait)  # type: ignore[attr-defined]
        yield client
