"""The hash-chained audit log: chain integrity, tamper evidence, append-only triggers, the
redaction guard and serialised appends from many tasks and many engines."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import anyio
import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from vocero.contracts.clock import VirtualClock
from vocero.contracts.ports import AuditSink
from vocero.store import AuditLog, Store
from vocero.store import audit as audit_module
from vocero.store.hashchain import GENESIS_HASH, canonical_json, entry_hash, is_sensitive_key

pytestmark = pytest.mark.anyio


async def append_many(log: AuditLog, count: int, prefix: str = "e") -> None:
    for index in range(count):
        await log.append("test.event", {"index": index, "who": prefix}, session_id=f"ses_{prefix}")


async def tamper(store: Store, statement: str) -> None:
    """Run raw SQL against ``audit_events`` with its append-only trigger out of the way."""
    async with store.engine.begin() as connection:
        if store.dialect == "sqlite":
            await connection.exec_driver_sql("DROP TRIGGER IF EXISTS audit_events_no_update")
        else:
            await connection.exec_driver_sql(
                "ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_change"
            )
        await connection.exec_driver_sql(statement)


async def test_appended_events_form_a_verifiable_chain(store: Store) -> None:
    log = AuditLog(store, clock=VirtualClock())
    first = await log.append("session.started", {"profile_id": "demo"}, session_id="ses_1")
    second = await log.append("tool.denied", {"reason_code": "TOOL_DENIED"}, actor="policy")
    assert first.prev_hash == GENESIS_HASH
    assert second.prev_hash == first.hash
    assert (first.seq, second.seq) == (1, 2)
    assert await log.verify() == await log.verify("global")
    verification = await log.verify()
    assert (verification.ok, verification.count, verification.broken_at_seq) == (True, 2, None)


async def test_hash_is_sha256_of_prev_hash_and_canonical_payload(store: Store) -> None:
    record = await AuditLog(store).append("k", {"b": 1, "a": [1, "x"]}, session_id="ses_9")
    payload = {
        "seq": record.seq,
        "chain": "global",
        "session_id": "ses_9",
        "kind": "k",
        "actor": "vocero",
        "at": record.at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "data": {"a": [1, "x"], "b": 1},
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert record.hash == hashlib.sha256((GENESIS_HASH + text).encode()).hexdigest()
    assert [event.hash for event in await AuditLog(store).events()] == [record.hash]


async def test_events_filter_by_session_and_keep_seq_order(store: Store) -> None:
    log = AuditLog(store)
    await append_many(log, 3, prefix="a")
    await append_many(log, 2, prefix="b")
    events = await log.events(session_id="ses_b")
    assert [event.data["index"] for event in events] == [0, 1]
    assert [event.seq for event in await log.events()] == [1, 2, 3, 4, 5]
    assert [event.seq for event in await log.events(after_seq=3, limit=1)] == [4]


async def test_tampered_row_is_reported_at_its_seq(store: Store) -> None:
    log = AuditLog(store)
    await append_many(log, 5)
    await tamper(store, "UPDATE audit_events SET actor = 'mallory' WHERE seq = 3")
    verification = await log.verify()
    assert (verification.ok, verification.count, verification.broken_at_seq) == (False, 5, 3)


async def test_rehashed_tampered_row_breaks_the_next_link(store: Store) -> None:
    log = AuditLog(store)
    await append_many(log, 4)
    third = (await log.events())[2]
    forged = entry_hash(third.prev_hash, seq=3, chain=third.chain, session_id=third.session_id,
                        kind=third.kind, actor="mallory", at=third.at, data=third.data)
    await tamper(store, f"UPDATE audit_events SET actor = 'mallory', hash = '{forged}' "
                        "WHERE seq = 3")
    assert (await log.verify()).broken_at_seq == 4


async def test_a_second_verification_walks_only_what_came_after_the_first(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = AuditLog(store, clock=VirtualClock())
    await append_many(log, 30)
    assert (await log.verify()).count == 30
    await append_many(log, 3, prefix="later")
    walked: list[int] = []
    feed = audit_module._ChainWalker.feed

    def watched(walker: Any, record: Any) -> None:
        walked.append(record.seq)
        feed(walker, record)

    monkeypatch.setattr(audit_module._ChainWalker, "feed", watched)
    verification = await log.verify()
    assert (verification.ok, verification.count) == (True, 33)
    assert walked == [31, 32, 33], "only the new events are walked"
    walked.clear()
    assert (await log.verify(full=True)).count == 33
    assert walked == list(range(1, 34))


async def test_tampering_is_reported_at_once_after_the_last_walk_and_within_a_minute_before(
    store: Store,
) -> None:
    clock = VirtualClock()
    log = AuditLog(store, clock=clock)
    await append_many(log, 6)
    assert (await log.verify()).ok
    await append_many(log, 2, prefix="new")
    await tamper(store, "UPDATE audit_events SET actor = 'mallory' WHERE seq = 8")
    assert (await log.verify()).broken_at_seq == 8  # after the last good walk: at once
    await tamper(store, "UPDATE audit_events SET actor = 'vocero' WHERE seq = 8")
    assert (await log.verify()).ok
    await tamper(store, "UPDATE audit_events SET actor = 'mallory' WHERE seq = 3")
    assert (await log.verify(full=True)).broken_at_seq == 3  # an auditor's full walk
    assert (await log.verify()).broken_at_seq == 3  # nothing good is remembered from it
    await tamper(store, "UPDATE audit_events SET actor = 'vocero' WHERE seq = 3")
    assert (await log.verify()).ok
    await tamper(store, "UPDATE audit_events SET actor = 'mallory' WHERE seq = 2")
    clock.advance(audit_module.FULL_WALK_S)
    assert (await log.verify()).broken_at_seq == 2  # the minute is up: walked in full


async def test_the_last_walked_event_changed_means_a_full_walk(store: Store) -> None:
    log = AuditLog(store, clock=VirtualClock())
    await append_many(log, 5)
    assert (await log.verify()).ok
    third = (await log.events())[4]
    forged = entry_hash(third.prev_hash, seq=5, chain=third.chain, session_id=third.session_id,
                        kind=third.kind, actor="mallory", at=third.at, data=third.data)
    await tamper(store, f"UPDATE audit_events SET actor = 'mallory', hash = '{forged}' "
                        "WHERE seq = 5")
    verification = await log.verify()  # the head still names the old hash
    assert (verification.ok, verification.broken_at_seq) == (False, 5)


async def test_update_and_delete_are_refused_by_the_database(store: Store) -> None:
    await append_many(AuditLog(store), 2)
    for statement in ("UPDATE audit_events SET kind = 'x'", "DELETE FROM audit_events"):
        with pytest.raises(IntegrityError, match="append-only"):
            async with store.engine.begin() as connection:
                await connection.execute(sa.text(statement))
    assert (await AuditLog(store).verify()).count == 2


@pytest.mark.parametrize(
    "data",
    [
        {"token": "abc"},
        {"resume_token": "abc"},
        {"Authorization": "Bearer abc"},
        {"detail": {"ref_audio": "UklGR..."}},
        {"items": [{"transcript": "my card number is"}]},
        {"mcp_credentials": {"k": "v"}},
        {"X-Api-Key": "k"},
    ],
)
async def test_guard_refuses_secrets_and_raw_speech(store: Store, data: dict[str, Any]) -> None:
    log = AuditLog(store)
    with pytest.raises(ValueError, match="opaque references only"):
        await log.append("config.rejected", data)
    assert (await log.verify()).count == 0


async def test_guard_allows_opaque_references(store: Store) -> None:
    data = {"resume_token_hash": "ab" * 32, "transcript_ref": "t_1", "audio_ms": 420,
            "rejected_fields": [{"field": "ref_audio", "reason": "NOT_ALLOWED"}]}
    record = await AuditLog(store).append("config.rejected", data)
    assert record.data == data


async def test_non_json_data_is_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="plain JSON"):
        await AuditLog(store).append("k", {"blob": b"\x00"})


async def test_concurrent_tasks_on_one_engine_keep_one_chain(store: Store) -> None:
    log = AuditLog(store)
    async with anyio.create_task_group() as group:
        for name in ("a", "b", "c", "d"):
            group.start_soon(append_many, log, 10, name)
    verification = await log.verify()
    assert (verification.ok, verification.count) == (True, 40)
    assert [event.seq for event in await log.events()] == list(range(1, 41))


async def test_two_engines_on_one_database_keep_one_chain(db_url: str) -> None:
    first, second = Store.open(db_url), Store.open(db_url)
    try:
        async with anyio.create_task_group() as group:
            for index, opened in enumerate((first, second, first, second)):
                group.start_soon(append_many, AuditLog(opened), 10, f"p{index}")
        verification = await AuditLog(first).verify()
        seqs = [event.seq for event in await AuditLog(second).events()]
    finally:
        await first.close()
        await second.close()
    assert (verification.ok, verification.count) == (True, 40)
    assert seqs == list(range(1, 41))


async def test_chains_are_independent(store: Store) -> None:
    log = AuditLog(store)
    await log.append("a", {}, chain="tenant-a")
    await log.append("b", {})
    await log.append("c", {}, chain="tenant-a")
    tenant = await log.events(chain="tenant-a")
    assert [event.prev_hash == GENESIS_HASH for event in tenant] == [True, False]
    assert (await log.verify("tenant-a")).ok
    assert (await log.verify()).count == 1


async def test_record_satisfies_the_audit_sink_port(store: Store) -> None:
    sink: AuditSink = AuditLog(store)
    await sink.record("session.closed", {"reason": "client"}, session_id="ses_1")
    assert [event.kind for event in await AuditLog(store).events("ses_1")] == ["session.closed"]


def test_canonical_json_is_sorted_and_compact() -> None:
    assert canonical_json({"b": [1, {"d": 1, "c": "é"}], "a": None}) == (
        '{"a":null,"b":[1,{"c":"é","d":1}]}'
    )


@pytest.mark.parametrize(
    ("key", "sensitive"),
    [
        ("refAudio", True),
        ("access_token", True),
        ("password", True),
        ("client_secret", True),
        ("resume_token_hash", False),
        ("max_tokens", False),
        ("audio_sha256", False),
        ("tool", False),
    ],
)
def test_sensitive_key_rule(key: str, sensitive: bool) -> None:
    assert is_sensitive_key(key) is sensitive
