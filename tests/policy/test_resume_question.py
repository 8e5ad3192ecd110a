"""A confirmation question and its answer across a dropped connection (issue 46 item 2): a "yes"
that meets the cut either reached the server and was acted on, or it did not; after the resume
the client learns which, and nothing is lost silently: the write's ``tool.status.v1`` comes again
(executed once), or the question is asked again (``tool.confirmation_required.v1``, same proposal
and revision, read back anew) and a "yes" to it runs the write once."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from policy_support import FixtureServers

from tests.policy.test_policy_conversation import App, app, ask_to_move, say, until_settled
from tests.support.wsclient import ProtocolClient


@contextmanager
def session(a: App, resume_token: str = "") -> Iterator[tuple[ProtocolClient, dict[str, Any]]]:
    """A connection (a resume with ``resume_token``); leaving the block drops it without
    ``session.close.v1``."""
    with a.client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.send("session.connect.v1", {"token": "demo-token"} | (
            {"resume_token": resume_token} if resume_token else {}))
        applied: dict[str, Any] = pc.expect("session.configuration_applied.v1")["data"]["payload"]
        pc.session_id = applied["session_id"]
        yield pc, applied


def writes(a: App, session_id: str) -> list[dict[str, Any]]:
    ops = a.get(f"/v1/operations?session_id={session_id}")["items"]
    return [op for op in ops if op["proposal_id"]]


def test_a_question_whose_answer_was_lost_is_asked_again_on_resume(
    tmp_path: Path, db_url: str, servers: FixtureServers
) -> None:
    with app(tmp_path, servers, db=db_url) as a:
        with session(a) as (pc, applied):
            say(pc, "list my appointments")
            question = ask_to_move(pc)  # read back and heard; the "yes" never arrives
        with session(a, applied["resume_token"]) as (again, resumed):
            assert resumed["session_id"] == applied["session_id"]
            asked = again.expect("tool.confirmation_required.v1")["data"]["payload"]
            assert (asked["proposal_id"], asked["revision"]) == (
                question["proposal_id"], question["revision"]), "the same question, again"
            assert asked["fields"] == question["fields"]
            done = again.expect("response.completed.v1")["data"]["payload"]
            assert done["status"] == "completed"
            assert done["heard_text"].startswith("We got cut off.")
            assert "3 PM" in done["heard_text"], "its read-back is spoken anew"
            assert a.reschedules("demo-token") == [], "nothing ran before the answer"
            again.send("input.text.v1", {"text": "yes"})
            assert until_settled(again) == "committed"
        [call] = a.reschedules("demo-token")
        [write] = writes(a, applied["session_id"])
        assert (write["proposal_id"], write["revision"]) == (
            question["proposal_id"], question["revision"])
        assert call["meta"]["io.vocero/operation_id"] == write["operation_id"]


def test_an_answer_acted_on_before_the_drop_is_reported_on_resume_not_asked_again(
    tmp_path: Path, db_url: str, servers: FixtureServers
) -> None:
    with app(tmp_path, servers, db=db_url) as a:
        with session(a) as (pc, applied):
            say(pc, "list my appointments")
            question = ask_to_move(pc)
            pc.send("input.text.v1", {"text": "yes"})
            assert until_settled(pc) == "committed"  # then the line drops
        [write] = writes(a, applied["session_id"])
        with session(a, applied["resume_token"]) as (again, _):
            status = again.expect("tool.status.v1")["data"]["payload"]
            assert status == {"tool_call_id": write["operation_id"],
                              "proposal_id": question["proposal_id"], "status": "committed",
                              "reason_code": write["reason_code"], "kind": "action"}
            done = say(again, "yes")  # the caller, unsure, says it again: a new request
            assert done["status"] == "completed"
            assert not again.of_type("tool.confirmation_required.v1") or all(
                q["proposal_id"] != question["proposal_id"]
                for q in again.of_type("tool.confirmation_required.v1")), "not asked again"
        assert len(a.reschedules("demo-token")) == 1, "the write ran once"
        assert len(writes(a, applied["session_id"])) == 1
