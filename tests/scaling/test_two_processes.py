"""Two ``vocero serve`` processes on one PostgreSQL: one is SIGKILLed holding an operation
``in_flight`` (the server is still working on it), one ``dispatch_pending`` (refused by its
bulkhead, waiting for a retry) and one ``authorized`` (waiting for a free outbox slot), with
four sessions live. The survivor takes all three over once the dead process's lease runs out
(local liveness off: only the lease tells, as across hosts), reconciles the in-flight one by
lookup, and every operation has exactly one effect at the owning service. A caller resumes on
the survivor with the token the dead process issued: same session, history as heard."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.scaling.support import (
    Appointments,
    Config,
    Vocero,
    applied,
    ask_to_move,
    client,
    say,
    status_of,
)
from tests.support.pg import fresh_db, requires_pg
from tests.support.polling import wait_for as poll

pytestmark = [pytest.mark.slow, requires_pg]

LEASE = ["--lease-ttl-s", "3", "--lease-local-liveness", "off", "--outbox-concurrency", "1"]
SLOW_MS = 2500


@pytest.fixture
def db() -> Iterator[str]:
    with fresh_db(migrated=True) as url:
        yield url


def wait_for(what: str, check: Any, timeout_s: float = 30.0) -> Any:
    return poll(what, check, timeout_s)


def operation_ids(node: Vocero, session_id: str) -> dict[str, Any]:
    return {op["operation_id"]: op for op in node.get(f"/v1/operations?session_id={session_id}")[
        "items"] if op["proposal_id"]}


def test_sigkill_with_work_at_every_stage_ends_each_operation_once_elsewhere(
    tmp_path: Path, db: str
) -> None:
    appointments = Appointments(tmp_path, delays=(
        f"list_appointments={SLOW_MS},reschedule_appointment={SLOW_MS}"))
    appointments.start()
    config = Config(tmp_path, appointments)
    config.write(server_concurrency=1)  # one call at a time per process: a bulkhead to hit
    doomed = Vocero(tmp_path, db, [*config.flags(), *LEASE, "--outbox-retry-s", "60"],
                    name="doomed")
    survivor = Vocero(tmp_path, db, [*config.flags(), *LEASE], name="survivor")
    try:
        doomed.start()
        survivor.start()
        with client(doomed, "alice-token") as c1, client(doomed, "bob-token") as c2, \
                client(doomed, "frank-token") as c3, client(doomed, "grace-token") as c4:
            for each in (c1, c2, c3):  # one listing at a time: the bulkhead holds one call
                say(each, "list my appointments")
            questions = {pc.session_id: ask_to_move(pc, apt) for pc, apt in (
                (c1, "APT-2001"), (c2, "APT-2002"), (c3, "APT-2003"))}
            resume_tokens = [applied(c1)["resume_token"], applied(c4)["resume_token"]]
            heard_before = [p["heard_text"] for p in c1.of_type("response.completed.v1")][:2]

            # a slow read holds the server's only slot: bob's confirmed write is refused by
            # the bulkhead before anything is sent and waits a minute for its retry
            c4.send("input.text.v1", {"text": "list my appointments"})
            wait_for("the fourth listing", lambda: len(appointments.calls(
                "list_appointments")) == 4)
            c2.send("input.text.v1", {"text": "yes"})
            pending = c2.expect("tool.status.v1", lambda p: p["status"] == "dispatch_pending"
                                and p["reason_code"] != "")["data"]["payload"]
            c4.expect("response.completed.v1")
            # alice's write is sent: the server works on it for 2.5 s
            c1.send("input.text.v1", {"text": "yes"})
            status_of(c1, "in_flight")
            wait_for("alice's write at the server", lambda: appointments.calls(
                "reschedule_appointment"))
            # frank's write waits for the outbox's only slot
            c3.send("input.text.v1", {"text": "yes"})
            status_of(c3, "authorized")
            ops = {sid: operation_ids(survivor, sid) for sid in questions}
            stages = sorted(op["status"] for each in ops.values() for op in each.values())
            assert stages == ["authorized", "dispatch_pending", "in_flight"]
            assert pending["reason_code"] == "CAPACITY_EXHAUSTED"
            doomed.get(f"/v1/sessions/{c1.session_id}")  # the recorder has written its turns
            doomed.kill()

        [first] = ops[c1.session_id]
        every = {op_id for each in ops.values() for op_id in each}

        def settled() -> dict[str, Any] | None:
            now = {k: v for sid in questions for k, v in operation_ids(survivor, sid).items()}
            done = all(op["status"] in ("committed", "rejected") for op in now.values())
            return now if done else None

        final = wait_for("the survivor to settle the dead process's work", settled, 45)
        assert {op_id: op["status"] for op_id, op in final.items()} == dict.fromkeys(
            every, "committed")
        assert final[first]["reason_code"] == "reconciled" or final[first]["attempts"] == 2
        # exactly one effect each at the owning service, under each one's operation id
        assert set(appointments.receipts()) == every
        versions = {k: v["version"] for k, v in appointments.state_data()["appointments"].items()}
        assert versions == {"APT-2001": 2, "APT-2002": 2, "APT-2003": 2, "APT-2004": 1}
        writes = appointments.calls("reschedule_appointment")
        sent = [w["meta"]["io.vocero/operation_id"] for w in writes]
        assert {op_id: sent.count(op_id) for op_id in every - {first}} == dict.fromkeys(
            every - {first}, 1)  # never sent before the kill: sent once, by the survivor
        assert 1 <= sent.count(first) <= 2  # resent under its id only if lookup found nothing
        assert appointments.calls("lookup_operation")  # reconciled before anything was resent
        takeover = [e for e in survivor.get(f"/v1/audit?session_id={c1.session_id}")["items"]
                    if e["kind"] == "operation.taken_over"]
        assert [e["data"]["operation_id"] for e in takeover] == [first]

        # the callers come back on the survivor with the tokens the dead process gave
        with client(survivor, "alice-token", resume_token=resume_tokens[0]) as back:
            resumed = applied(back)
            assert (resumed["session_id"], resumed["rejected_fields"]) == (c1.session_id, [])
            record = survivor.get(f"/v1/sessions/{c1.session_id}")
            said = [h["text"] for h in record["history"] if h["role"] == "user"]
            assert said[:3] == ["list my appointments",
                                "move my appointment APT-2001 to friday at 3pm", "yes"]
            heard = [h["text"] for h in record["history"] if h["role"] == "assistant"]
            assert heard[:2] == heard_before  # what the caller heard, as it heard it
        with client(survivor, "grace-token", resume_token=resume_tokens[1]) as back:
            assert applied(back)["session_id"] == c4.session_id
            reply = say(back, "what did you say")  # the model sees the history as heard
            assert reply["heard_text"] == "I said: I found your appointments."
    finally:
        doomed.stop()
        survivor.stop()
        appointments.stop()
