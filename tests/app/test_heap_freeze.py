"""A warm server freezes its heap out of the cyclic garbage collector; other runtimes do not."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from dataclasses import replace

import pytest
from starlette.testclient import TestClient

from vocero.app.server import create_app
from vocero.app.settings import Settings


def _ready(client: TestClient) -> None:
    client.portal.call(client.app.state.runtime.ready.wait)  # type: ignore[attr-defined]
    assert client.get("/readyz").status_code == 200


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()  # what a test froze goes back to the collector


def test_a_runtime_freezes_its_warm_heap_only_when_asked(
    sim_settings: Settings, unfrozen: None
) -> None:
    with TestClient(create_app(sim_settings)) as client:
        _ready(client)
        assert gc.get_freeze_count() == 0
    with TestClient(create_app(replace(sim_settings, freeze_heap=True))) as client:
        _ready(client)
        frozen = gc.get_freeze_count()
        assert frozen > 10_000, "the loaded process's objects are out of the collector's walk"
        # a full collection now walks only what came after
        assert sum(gc.get_count()) < frozen
