"""``GET /v1/units`` (SPEC §8) and the recorder's unit writes: every unit a session planned, in
order, with exactly the SPEC's item fields, evidence without passages, and audio kept for the
review through the recorder's bounded writer."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import anyio
import pytest
import yaml
from starlette.testclient import TestClient

from tests.speech.support import DECEMBER_1, planner, stream
from vocero.app.adapters.recorder import StoreRecorder
from vocero.app.server import create_app
from vocero.app.settings import Settings
from vocero.speech.admission import Decision
from vocero.speech.records import decided_entry, unit_entry
from vocero.store import Store
from vocero.store.migrate import upgrade
from vocero.store.record_ops import RecordOps
from vocero.store.repositories import Conversations
from vocero.store.units import UnitRepository

ADMIN = {"authorization": "Bearer op-admin-token"}
FIELDS = {
    "unit_id", "generation_id", "turn_id", "question_revision", "kind", "text", "claim_keys",
    "evidence", "disposition", "reason_code", "planned_at", "admitted_at", "played_ms",
}


def seed_session(client: TestClient, session_id: str) -> list[str]:
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    p = planner()
    units = p.claims(["returns.opened"]) + stream(p, "It costs $40.")

    async def write() -> None:
        await runtime.conversations.create_session(
            session_id=session_id, tenant_id="acme", subject_ref="sub_x", profile_id="demo",
            profile_version="1",
        )
        repo = UnitRepository(runtime.store)
        for unit in units:
            await repo.record(unit_entry(unit, session_id=session_id))
        await repo.record(decided_entry(units[0], Decision("ready"), session_id=session_id,
                                        at=DECEMBER_1 + 0.5, audio_ms=900.0))
        await repo.record(decided_entry(units[-1], Decision("stale", "question_revised"),
                                        session_id=session_id, at=DECEMBER_1 + 0.6))

    assert client.portal is not None
    client.portal.call(write)
    return [u.unit_id for u in units]


@pytest.mark.process
def test_units_of_a_session_in_order_with_spec_fields(client: TestClient) -> None:
    ids = seed_session(client, "ses_units")
    response = client.get("/v1/units", params={"session_id": "ses_units"}, headers=ADMIN)
    assert response.status_code == 200
    items = response.json()["items"]
    assert [i["unit_id"] for i in items] == ids
    assert all(set(item) == FIELDS for item in items)
    claim, refused, fallback = items
    assert (claim["kind"], claim["disposition"], claim["claim_keys"]) == (
        "claim", "admitted", ["returns.opened"])
    assert claim["evidence"] == [{"source_id": "returns.opened-policy", "version": "3"}]
    assert claim["planned_at"].endswith("Z") or "+00:00" in claim["planned_at"]
    assert claim["admitted_at"] is not None
    assert (refused["disposition"], refused["reason_code"]) == ("refused", "unsupported_value")
    assert refused["admitted_at"] is None
    assert (fallback["kind"], fallback["disposition"], fallback["reason_code"]) == (
        "fallback", "stale", "question_revised")
    assert "passage" not in response.text and "Evidence for" not in response.text


@pytest.mark.process
def test_units_need_a_reader_and_a_known_session(client: TestClient) -> None:
    assert client.get("/v1/units", params={"session_id": "x"}).status_code == 401
    missing = client.get("/v1/units", headers=ADMIN)
    assert missing.status_code == 400
    assert missing.json() == {"error": {"code": "invalid_query", "field": "session_id",
                                        "reason": "required"}}
    assert client.get("/v1/units", params={"session_id": "ses_nope"},
                      headers=ADMIN).status_code == 404


@pytest.mark.process
def test_a_role_without_read_access_is_forbidden(sim_settings: Settings, tmp_path: Path) -> None:
    operators = tmp_path / "operators.yaml"
    operators.write_text(yaml.safe_dump([{"token": "v", "name": "vic", "roles": ["viewer"]}]))
    with TestClient(create_app(replace(sim_settings, operators=str(operators)))) as c:
        response = c.get("/v1/units", params={"session_id": "x"},
                         headers={"authorization": "Bearer v"})
        assert response.status_code == 403


@pytest.mark.anyio
async def test_the_recorder_writes_units_and_their_audio_in_order(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'v.db'}"
    await anyio.to_thread.run_sync(upgrade, url)
    store = Store.open(url)
    try:
        conversations = Conversations(store)
        await conversations.create_session(session_id="ses_r", tenant_id="acme",
                                           subject_ref="s", profile_id="demo",
                                           profile_version="1")
        drops: list[int] = []
        recorder = StoreRecorder(RecordOps(store), lambda _reason: drops.append(1), units=True)
        [unit] = planner().claims(["returns.opened"])
        async with anyio.create_task_group() as tg:
            await tg.start(recorder.run)
            recorder.unit(unit_entry(unit, session_id="ses_r"))
            writer = recorder.unit_audio("ses_r", unit.unit_id, sample_rate=16000)
            writer.write(b"\x01\x00" * 160)
            writer.write(b"\x02\x00" * 160)
            recorder.unit(decided_entry(unit, Decision("ready"), session_id="ses_r",
                                        at=DECEMBER_1 + 1, audio_ms=20.0))
            writer.close()
            writer.write(b"\x03\x00")  # after close: ignored
            await recorder.flush()
            recorder.stop()
        audio = await UnitRepository(store).audio(unit.unit_id)
        assert audio is not None and audio.pcm == b"\x01\x00" * 160 + b"\x02\x00" * 160
        [view] = await UnitRepository(store).units("ses_r")
        assert (view.disposition, view.audio_ms, view.has_audio) == ("admitted", 20.0, True)
        assert drops == []
    finally:
        await store.close()
