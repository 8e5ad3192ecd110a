"""Finding 7 (second part): ``/v1/audit`` can be verified from its answer, a page at a time, and
one client cannot grow it without bound.

The attack: a flood of governed updates wrote one audit event each (3,000 from one client), all
of them came back in one unpaginated answer, and the items lacked ``chain``, so verifying the
hash chain meant reading the source. Here the chain is recomputed from the API's items alone,
with the rule docs/security.md states, page by page; and the same flood leaves two events.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from starlette.testclient import TestClient

from tests.security.support import FIXTURE_ADMIN
from tests.support.wsclient import ProtocolClient

GENESIS = "0" * 64


def recomputed(item: dict[str, Any]) -> str:
    """An item's hash by the documented rule, without Vocero's code."""
    at = datetime.fromisoformat(item["at"].replace("Z", "+00:00")).astimezone(UTC)
    payload = {name: item[name] for name in ("seq", "chain", "session_id", "kind", "actor", "data")}
    payload["at"] = at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256((item["prev_hash"] + text).encode()).hexdigest()


def pages(client: TestClient, **params: Any) -> list[dict[str, Any]]:
    """Every page of ``/v1/audit`` from the start."""
    answers = []
    after = 0
    for _ in range(10_000):
        answer = client.get("/v1/audit", params={**params, "after_seq": after},
                            headers=FIXTURE_ADMIN).json()  # fmt: skip
        answers.append(answer)
        if "next_after_seq" not in answer:
            return answers
        after = answer["next_after_seq"]
    raise AssertionError("pages never end")


def _activity(client: TestClient) -> str:
    with client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect()
        for field in ("tools", "scopes", "limits"):
            pc.send("session.update_requested.v1", {field: ["x"]})
            pc.expect("session.configuration_applied.v1")
        pc.send("session.close.v1")
        pc.expect_close()
    return pc.session_id


def test_the_chain_verifies_from_the_items_alone_page_by_page(client: TestClient) -> None:
    for _ in range(2):
        _activity(client)
    answers = pages(client, limit=3)
    items = [item for answer in answers for item in answer["items"]]
    assert len(answers) > 2 and all(len(a["items"]) <= 3 for a in answers)
    assert [a["next_after_seq"] for a in answers[:-1]] == [a["items"][-1]["seq"]
                                                          for a in answers[:-1]]  # fmt: skip
    assert len(items) > 6
    previous = GENESIS
    for item in items:
        assert item["chain"] and item["prev_hash"] == previous
        assert recomputed(item) == item["hash"]
        previous = item["hash"]
    whole = client.get("/v1/audit", headers=FIXTURE_ADMIN).json()
    assert whole["items"] == items and "next_after_seq" not in whole
    assert whole["chain"]["ok"] is True


def test_a_session_filter_pages_too_and_each_item_still_recomputes(client: TestClient) -> None:
    session_id = _activity(client)
    _activity(client)
    items = [i for a in pages(client, session_id=session_id, limit=2) for i in a["items"]]
    assert items and {i["session_id"] for i in items} == {session_id}
    assert all(recomputed(i) == i["hash"] for i in items)


def test_the_default_page_is_500(client: TestClient) -> None:
    runtime = client.app.state.runtime  # type: ignore[attr-defined]

    async def append_many() -> None:
        for n in range(505):
            await runtime.audit.record("test.filler", {"n": n})

    assert client.portal is not None
    client.portal.call(append_many)
    first = client.get("/v1/audit", headers=FIXTURE_ADMIN).json()
    assert len(first["items"]) == 500
    rest = client.get("/v1/audit", params={"after_seq": first["next_after_seq"]},
                      headers=FIXTURE_ADMIN).json()  # fmt: skip
    assert rest["items"] and "next_after_seq" not in rest
    assert rest["items"][0]["prev_hash"] == first["items"][-1]["hash"]


def test_bad_paging_parameters_are_refused(client: TestClient) -> None:
    for params in ({"limit": "0"}, {"limit": "5001"}, {"limit": "ten"}, {"after_seq": "-1"},
                   {"after_seq": "9" * 30}, {"verify": "quick"}):  # fmt: skip
        answer = client.get("/v1/audit", params=params, headers=FIXTURE_ADMIN)
        assert answer.status_code == 400, params
        error = answer.json()["error"]
        assert (error["code"], error["field"]) == ("invalid_query", next(iter(params)))


def test_a_change_to_an_event_already_verified_shows_on_a_full_walk(client: TestClient) -> None:
    """Pages walk on from the last good walk; ``verify=full`` walks everything now."""
    with client.websocket_connect("/v1/realtime") as ws:
        ProtocolClient(ws).connect()
    assert client.get("/v1/audit", headers=FIXTURE_ADMIN).json()["chain"]["ok"]
    runtime = client.app.state.runtime  # type: ignore[attr-defined]

    async def tamper() -> None:
        async with runtime.store.engine.begin() as connection:
            await connection.exec_driver_sql("DROP TRIGGER IF EXISTS audit_events_no_update")
            await connection.exec_driver_sql(
                "UPDATE audit_events SET actor = 'mallory' WHERE seq = 1")

    assert client.portal is not None
    client.portal.call(tamper)
    full = client.get("/v1/audit", params={"verify": "full"}, headers=FIXTURE_ADMIN).json()
    assert (full["chain"]["ok"], full["chain"]["broken_at_seq"]) == (False, 1)
    again = client.get("/v1/audit", headers=FIXTURE_ADMIN).json()  # nothing good remembered
    assert (again["chain"]["ok"], again["chain"]["broken_at_seq"]) == (False, 1)


def test_a_flood_of_identical_governed_updates_writes_two_events(client: TestClient) -> None:
    with client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect()
        for _ in range(50):
            pc.send("session.update_requested.v1", {"system_prompt": "obey me", "tools": ["*"]})
            rejected = pc.expect("session.configuration_applied.v1")["data"]["payload"]
            assert len(rejected["rejected_fields"]) == 2, "every answer still says what was cut"
        pc.send("session.close.v1")
        pc.expect_close()
    answer = client.get("/v1/audit", params={"session_id": pc.session_id},
                        headers=FIXTURE_ADMIN).json()  # fmt: skip
    configuration = [i for i in answer["items"] if i["kind"].startswith("session.configuration")]
    assert [(i["kind"], i["data"]) for i in configuration] == [
        ("session.configuration_applied",
         {"applied": [], "rejected": ["system_prompt", "tools"],
          "reasons": ["instructions_governed_by_profile", "tools_governed_by_profile"]}),
        ("session.configuration_coalesced", {"coalesced_count": 49, "distinct_count": 1}),
    ]  # fmt: skip
    assert answer["chain"]["ok"] is True


def test_distinct_differences_are_bounded_too(client: TestClient) -> None:
    names = ["system_prompt", "instructions", "tools", "mcp_credentials", "ref_audio", "ref_text",
             "voice_profile_id", "voice_version", "limits", "scopes"]  # fmt: skip
    with client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect()
        for mask in range(1, 41):  # forty different subsets of governed fields
            fields = {name: "x" for bit, name in enumerate(names) if mask >> bit & 1}
            pc.send("session.update_requested.v1", fields)
            pc.expect("session.configuration_applied.v1")
        pc.send("session.close.v1")
        pc.expect_close()
    answer = client.get("/v1/audit", params={"session_id": pc.session_id},
                        headers=FIXTURE_ADMIN).json()  # fmt: skip
    kinds = [i["kind"] for i in answer["items"]]
    assert kinds.count("session.configuration_applied") == 16
    summary = next(i for i in answer["items"] if i["kind"] == "session.configuration_coalesced")
    assert summary["data"] == {"coalesced_count": 24, "distinct_count": 16}
