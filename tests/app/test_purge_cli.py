"""``vocero purge [--db URL] [--now RFC3339] [--retention FILE]``: one pass, the JSON report on
standard output, what was erased in the audit log."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest

from tests.store.test_retention import START, a_call, contents
from vocero.app.settings import REPO_ROOT
from vocero.contracts.clock import VirtualClock
from vocero.store import Store, upgrade
from vocero.store.audit import AuditLog

pytestmark = pytest.mark.process


def _purge(url: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vocero", "purge", "--db", url, *flags],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=False,
    )


def test_vocero_purge_erases_and_reports(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'v.db'}"
    upgrade(url)

    async def populate() -> None:
        store = Store.open(url)
        await a_call(store, VirtualClock(START))
        await store.close()

    anyio.run(populate)
    day_91 = datetime.fromtimestamp(START, UTC) + timedelta(days=91)
    retention = tmp_path / "retention.yaml"
    retention.write_text("model_responses: keep\n")
    done = _purge(url, "--now", day_91.isoformat().replace("+00:00", "Z"),
                  "--retention", str(retention))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert set(report["classes"]) == {"transcripts"}
    assert report["classes"]["transcripts"]["turns_count"] == 1

    async def check() -> None:
        store = Store.open(url)
        now = await contents(store)
        assert now["turn"] == [""] and now["heard"] == ["Done, it is on Friday."]
        log = AuditLog(store)
        assert [e.data["data_class"] for e in await log.events()
                if e.kind == "retention.purged"] == ["transcripts"]
        assert (await log.verify()).ok
        await store.close()

    anyio.run(check)


@pytest.mark.parametrize(("flags", "message"), [
    (["--now", "yesterday"], "bad --now"),
    (["--retention", "{bad}"], "configuration error"),
])
def test_bad_flags_are_named(tmp_path: Path, flags: list[str], message: str) -> None:
    if flags[0] == "--retention":
        bad = tmp_path / "r.yaml"
        bad.write_text("raw_audio: 7\n")
        flags = ["--retention", str(bad)]
    done = _purge(f"sqlite:///{tmp_path / 'v.db'}", *flags)
    assert done.returncode == 2 and message in done.stderr
