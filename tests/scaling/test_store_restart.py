"""PostgreSQL stopped and started again under a live ``vocero serve`` (a cluster of the test's
own). While it is down, writes fail closed: a "yes" to a pending reschedule is answered that
nothing was changed, and no operation exists or reaches the owning service. Every live session is
told once (``error.v1`` ``STORE_UNAVAILABLE``) and goes ``DEGRADED`` once: an idle one at once,
one busy answering (a slow listing) once its answer is over. Once the store answers again a
session still degraded leaves ``DEGRADED`` by itself, turns work, and a confirmed write reaches
the service exactly once, with its record committed. PostgreSQL only: SQLite is a file."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.scaling.support import (
    Appointments,
    Cluster,
    Config,
    Vocero,
    applied,
    ask_to_move,
    client,
    own_cluster,
    say,
    status_of,
)
from tests.support.pg import requires_pg
from tests.support.polling import wait_for as poll
from tests.support.wsclient import ProtocolClient

pytestmark = [pytest.mark.slow, requires_pg]

LEASE_TTL_S = 1.5
"""Renewals every 0.5 s: an outage is noticed within half a second of the store going away."""
NOTICE_S = 10.0
"""How long a caller may wait to hear of the outage, or of its end (renewal, reconnection)."""
SLOW_LIST_MS = 1500
"""The server takes this long to list: bob's listing is still running when the store goes."""


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with own_cluster() as own:
        yield own


def state_change(pc: ProtocolClient, *, to: str = "", leaving: str = "") -> dict[str, Any]:
    payload: dict[str, Any] = pc.expect("session.state.v1", lambda p: (
        (not to or p["state"] == to) and (not leaving or p["previous"] == leaving)))[
        "data"]["payload"]
    return payload


def errors(pc: ProtocolClient) -> list[str]:
    return [e["code"] for e in pc.of_type("error.v1")]


def wait_for(what: str, check: Callable[[], Any], timeout_s: float = 10.0) -> Any:
    return poll(what, check, timeout_s)


def operations(node: Vocero, session_id: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = node.get(f"/v1/operations?session_id={session_id}")["items"]
    return [op for op in items if op["proposal_id"]]


def history(node: Vocero, session_id: str) -> list[tuple[str, str]]:
    return [(h["role"], h["text"]) for h in node.get(f"/v1/sessions/{session_id}")["history"]]


def settled(told: list[tuple[str, str]], line: tuple[str, str], times: int
            ) -> list[tuple[str, str]] | None:
    """``told`` once ``line`` is in it ``times`` times."""
    return told if told.count(line) >= times else None


def test_store_restart_mid_call_fails_writes_closed_degrades_and_recovers(
    tmp_path: Path, cluster: Cluster
) -> None:
    appointments = Appointments(tmp_path, delays=f"list_appointments={SLOW_LIST_MS}")
    appointments.start()
    config = Config(tmp_path, appointments)
    config.write()
    node = Vocero(tmp_path, cluster.url, [*config.flags(), "--lease-ttl-s", str(LEASE_TTL_S)])
    try:
        node.start()
        with client(node, "alice-token", timeout_s=NOTICE_S) as alice, \
                client(node, "bob-token", timeout_s=NOTICE_S) as bob, \
                client(node, "frank-token", timeout_s=NOTICE_S) as frank:
            frank_token = applied(frank)["resume_token"]
            assert say(alice, "list my appointments")["heard_text"] == "I found your appointments."
            ask_to_move(alice, "APT-2001")  # a write is read back from what was listed
            state_change(alice, to="AWAITING_CONFIRMATION")
            bob.send("input.text.v1", {"text": "list my appointments"})  # busy when it goes
            wait_for("bob's listing at the server", lambda: len(appointments.calls(
                "list_appointments")) == 2)

            cluster.stop()
            # every live session is told at once, with a stable code
            for each in (alice, bob):
                told = each.expect("error.v1")["data"]["payload"]
                assert (told["code"], told["category"], told["retryable"]) == (
                    "STORE_UNAVAILABLE", "dependency", True)
            state_change(alice, to="DEGRADED")  # idle: at once
            frank.expect("error.v1")
            frank.send("session.close.v1", {})  # frank hangs up while the store is away
            assert frank.expect_close() == 1000
            wait_for("frank's token withdrawal queued", lambda: node.events(
                "session.resume_token_withdrawal_queued"))
            assert bob.expect("response.completed.v1")["data"]["payload"]["heard_text"]
            state_change(bob, to="DEGRADED", leaving="LISTENING")  # busy: once its answer ended

            # a "yes" while the store is down: nothing can be recorded, so nothing is done
            alice.send("input.text.v1", {"text": "yes"})
            refused = alice.expect("response.completed.v1")["data"]["payload"]
            assert "haven't made any change" in refused["heard_text"]
            assert not [s for s in alice.of_type("tool.status.v1") if s["proposal_id"]]
            assert appointments.calls("reschedule_appointment") == []

            cluster.start()  # bob, still degraded, comes back by himself
            assert state_change(bob, leaving="DEGRADED")["state"] == "LISTENING"
            assert say(bob, "list my appointments")["heard_text"] == "I found your appointments."

            # the same write, asked and confirmed again, now happens, exactly once
            question = ask_to_move(alice, "APT-2001")
            alice.send("input.text.v1", {"text": "yes"})
            committed = status_of(alice, "committed")
            assert committed["proposal_id"] == question["proposal_id"]
            assert errors(alice) == ["STORE_UNAVAILABLE"]  # told once, nothing INTERNAL
            assert errors(bob) == ["STORE_UNAVAILABLE"]
            states = [p["state"] for p in alice.of_type("session.state.v1")]
            assert states.count("DEGRADED") == 1  # degraded once per outage
            [op] = operations(node, alice.session_id)  # no operation row of the refused "yes"
            assert (op["proposal_id"], op["status"]) == (question["proposal_id"], "committed")
            # what was said while the store was away is on record, in order, once
            # (turns reach the store through the recorder's queue: a live call's record may
            # trail what was said by a batch)
            told = wait_for("alice's second yes on record", lambda: settled(
                history(node, alice.session_id), ("user", "yes"), 2))
            refusal = refused["heard_text"]
            assert told.count(("user", "yes")) == 2 and told.count(("assistant", refusal)) == 1
            during = told.index(("assistant", refusal))
            assert told[during - 1] == ("user", "yes")  # the "yes" the store did not see at once
            assert told[during + 1][0] == "user"  # the move asked again after the store came back
            # one answered in the outage, one after
            wait_for("bob's two answers on record", lambda: history(node, bob.session_id).count(
                ("assistant", "I found your appointments.")) == 2)
        # frank's hang-up is on record once the store is back: his token no longer resumes
        frank_record = node.get(f"/v1/sessions/{frank.session_id}")
        assert frank_record["closed_at"] is not None
        closed = [e for e in node.get(f"/v1/audit?session_id={frank.session_id}")["items"]
                  if e["kind"] == "session.closed"]
        assert len(closed) == 1
        with client(node, "frank-token", resume_token=frank_token) as again:
            refused_resume = applied(again)
            assert refused_resume["session_id"] != frank.session_id
            assert "resume_token" in [r["field"] for r in refused_resume["rejected_fields"]]
        writes = appointments.calls("reschedule_appointment")
        assert [w["meta"]["io.vocero/operation_id"] for w in writes] == [op["operation_id"]]
        assert set(appointments.receipts()) == {op["operation_id"]}
        assert appointments.state_data()["appointments"]["APT-2001"]["version"] == 2
        assert node.process.poll() is None
        assert [e["sessions"] for e in node.events("store.unavailable")] == [3]
        assert len(node.events("store.available")) == 1
        assert node.events("recorder.store_unreachable")  # the writes were kept, then applied
        assert not node.events("recorder.write_failed")
        assert not node.events("recorder.write_abandoned")
    finally:
        node.stop()
        appointments.stop()
