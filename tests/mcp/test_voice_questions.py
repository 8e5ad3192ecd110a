"""A server's questions answered by voice, end to end through ``/v1/realtime`` (sim runners,
the real composition root, the bookings fixture server on both protocol revisions).

The answer that called the tool says the question and ends; the caller's turns fill the fields;
for a write the answers are read back, a value changed over the read-back is a new revision
read back again, and only a "yes" heard after every value sends them; the call then carries on
and its result is said. A question for a secret never reaches the caller."""

from __future__ import annotations

import json
import sys
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.support.apps import sim_app
from tests.support.wsclient import ProtocolClient
from vocero.app.settings import REPO_ROOT

SERVER = REPO_ROOT / "fixtures" / "mcp_servers" / "bookings_server.py"
SCRIPT: dict[str, Any] = {
    "tts": {"ms_per_char": 2},
    "llm": [
        {
            "match": r"book a table at (?P<r>\w+)",
            "tool": "bookings.book",
            "arguments": {"restaurant_id": "{r}"},
        },
        {
            "match": r"link my account (?P<a>\w+)",
            "tool": "bookings.link",
            "arguments": {"account_id": "{a}"},
        },
        {
            "match": r"pay for order (?P<o>\w+)",
            "tool": "bookings.pay",
            "arguments": {"order_id": "{o}"},
        },
        {
            "match": r"release the deposit of (?P<o>\w+)",
            "tool": "bookings.deposit",
            "arguments": {"order_id": "{o}"},
        },
        {"match": r"rate the (?P<t>\w+)", "tool": "bookings.survey", "arguments": {"topic": "{t}"}},
        {"match": r"^(yes|yeah)\b", "intent": "confirm"},
        {"match": r"^(no|nope)\b", "intent": "reject"},
        {"match": ".*", "reply": "I can help with bookings."},
    ],
}


def profile(folder: Path, protocol: str) -> dict[str, Any]:
    return {
        "id": "bookings",
        "version": "1",
        "match": {"tenant": "acme"},
        "mcp_servers": {
            "bookings": {
                "command": sys.executable,
                "args": [str(SERVER)],
                "protocol": protocol,
                "env": {
                    "VOCERO_MCP_RECORD": str(folder / "bookings.jsonl"),
                    "VOCERO_MCP_STATE": str(folder / "bookings.json"),
                },
            }
        },
        "tools": [
            {
                "name": "bookings.book",
                "server": "bookings",
                "resolves_to": "book_table",
                "action_class": "reversible_write",
                "required_scopes": ["bookings:write"],
            },
            {
                "name": "bookings.link",
                "server": "bookings",
                "resolves_to": "link_account",
                "action_class": "reversible_write",
                "required_scopes": ["bookings:write"],
            },
            {
                "name": "bookings.pay",
                "server": "bookings",
                "resolves_to": "verify_payment",
                "action_class": "reversible_write",
                "required_scopes": ["bookings:write"],
            },
            {
                "name": "bookings.deposit",
                "server": "bookings",
                "resolves_to": "release_deposit",
                "action_class": "reversible_write",
                "required_scopes": ["bookings:write"],
            },
            {
                "name": "bookings.survey",
                "server": "bookings",
                "resolves_to": "survey",
                "action_class": "read",
                "required_scopes": ["bookings:read"],
            },
        ],
    }


BOOKER = {
    "token": "booker",
    "subject": "bob",
    "tenant": "acme",
    "roles": ["customer"],
    "scopes": ["bookings:read", "bookings:write"],
    "timezone": "Europe/Madrid",
}


def app(
    tmp_path: Path, protocol: str, input_timeout_s: float = 60.0
) -> AbstractContextManager[TestClient]:
    return sim_app(
        tmp_path, profile(tmp_path, protocol), [BOOKER], SCRIPT,
        mcp_input_timeout_s=input_timeout_s,
    )


def spoken(pc: ProtocolClient, since: int) -> str:
    return "".join(
        f["data"]["payload"]["text"]
        for f in pc.frames[since:]
        if f["type"] == "vocero.response.text_delta.v1"
    )


def say(pc: ProtocolClient, text: str) -> str:
    mark = len(pc.frames)
    pc.send("input.text.v1", {"text": text})
    pc.expect("response.completed.v1")
    return spoken(pc, mark)


def recorded(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "bookings.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("protocol", ["2026-07-28", "2025-11-25"])
def test_a_servers_question_is_asked_corrected_read_back_and_answered_by_voice(
    tmp_path: Path, protocol: str
) -> None:
    with app(tmp_path, protocol) as client, client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect("booker")
        asked = say(pc, "book a table at R1")
        question = pc.of_type("tool.input_required.v1")[0]
        assert (question["server"], question["mode"]) == ("bookings", "form")
        assert {f["name"] for f in question["fields"]} == {"date", "party_size"}
        assert asked.startswith("Bookings needs to know"), asked
        pc.auto_playout = False  # the caller corrects a value over the read-back
        mark = len(pc.frames)
        pc.send("input.text.v1", {"text": "on Friday for four people"})
        pc.expect("response.audio_delta.v1")
        first = spoken(pc, mark)
        assert first.startswith("To confirm:") and "people 4" in first, first
        pc.auto_playout = True
        mark = len(pc.frames)
        pc.send("input.text.v1", {"text": "no, five people"})
        assert pc.expect("output.stop_and_flush.v1")["data"]["payload"]["reason"] == "new_input"
        pc.expect("response.completed.v1", lambda p: p["status"] == "completed")
        again = spoken(pc, mark)
        assert "people 5" in again and "people 4" not in again, again
        assert not [line for line in recorded(tmp_path) if line.get("kind") == "input"], (
            "nothing is sent to the server before the caller confirms"
        )
        done = say(pc, "yes")
        assert "R1 is booked" in done, done  # the call carried on; its result is said
    answers = [line for line in recorded(tmp_path) if line.get("kind") == "input"]
    assert [(a["action"], a["keys"]) for a in answers] == [("accept", ["date", "party_size"])]
    state = json.loads((tmp_path / "bookings.json").read_text())
    [booking] = state["bookings"].values()
    assert (booking["restaurant_id"], booking["party_size"]) == ("R1", 5)


def test_a_question_for_a_secret_never_reaches_the_caller(tmp_path: Path) -> None:
    with app(tmp_path, "2026-07-28") as client, client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect("booker")
        answer = say(pc, "link my account A1")
        assert "password" not in answer.lower()
        assert not pc.of_type("tool.input_required.v1"), "a secret is never asked"
    [refusal] = [line for line in recorded(tmp_path) if line.get("kind") == "input"]
    assert (refusal["action"], refusal["reason"]) == ("decline", "input_secret_requested")
    linked = (
        json.loads((tmp_path / "bookings.json").read_text())
        if (tmp_path / "bookings.json").exists()
        else {}
    )
    assert not linked.get("linked")


def booked(tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "bookings.json"
    return json.loads(path.read_text())["bookings"] if path.exists() else {}


def test_a_no_over_the_read_back_declines_and_nothing_is_booked(tmp_path: Path) -> None:
    with app(tmp_path, "2026-07-28") as client, client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect("booker")
        say(pc, "book a table at R2")
        assert "To confirm:" in say(pc, "tomorrow, two people")
        say(pc, "no")
        assert pc.expect("session.state.v1")["data"]["payload"]["state"] == "LISTENING"
    [answer] = [line for line in recorded(tmp_path) if line.get("kind") == "input"]
    assert (answer["action"], answer["keys"]) == ("decline", [])
    assert booked(tmp_path) == {}


def test_a_yes_before_the_read_back_was_heard_sends_nothing(tmp_path: Path) -> None:
    with app(tmp_path, "2026-07-28") as client, client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect("booker")
        say(pc, "book a table at R3")
        pc.auto_playout = False
        pc.send("input.text.v1", {"text": "tomorrow for three"})
        pc.expect("response.audio_delta.v1")
        pc.send("input.speech_started.v1")  # talks over the read-back: it is not heard whole
        assert pc.expect("response.completed.v1")["data"]["payload"]["status"] == "interrupted"
        pc.auto_playout = True
        again = say(pc, "yes")
        assert again.startswith("Let me finish first. To confirm:") and "people 3" in again
        assert not [line for line in recorded(tmp_path) if line.get("kind") == "input"]
        assert "R3 is booked" in say(pc, "yes")  # heard whole this time
    [answer] = [line for line in recorded(tmp_path) if line.get("kind") == "input"]
    assert answer["action"] == "accept"
    [booking] = booked(tmp_path).values()
    assert (booking["restaurant_id"], booking["party_size"]) == ("R3", 3)


def test_a_link_is_shown_never_spoken_and_done_carries_the_call_on(tmp_path: Path) -> None:
    with app(tmp_path, "2026-07-28") as client, client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect("booker")
        words = say(pc, "pay for order O7")
        [question] = pc.of_type("tool.input_required.v1")
        assert question["mode"] == "url" and question["fields"] == []
        assert question["link"]["url"] == "https://pay.example.com/approve/O7"
        assert question["link"]["server"] == "bookings"
        assert "http" not in words and "link from bookings" in words, words
        say(pc, "done")
    [answer] = [line for line in recorded(tmp_path) if line.get("kind") == "input"]
    assert answer["action"] == "accept"


def test_a_page_the_server_sends_the_caller_to_first_is_shown_and_done_runs_the_call(
    tmp_path: Path,
) -> None:
    """2025-11-25: the server refuses the call until the caller has been to its page
    (``-32042``); the link is shown, "done" is the caller's word, the server's notice that the
    page is finished lets the same call run."""
    with app(tmp_path, "2025-11-25") as client, client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect("booker")
        words = say(pc, "release the deposit of D5")
        [question] = pc.of_type("tool.input_required.v1")
        assert question["mode"] == "url"
        assert question["link"]["url"] == "https://pay.example.com/release/D5"
        assert "http" not in words and "link from bookings" in words, words
        said = say(pc, "done")
        [ended] = pc.of_type("tool.status.v1")[-1:]
        assert ended["status"] == "committed", ended
        assert said.startswith("Done:") and "D5" in said, said  # the committed result, said
    sent = [line for line in recorded(tmp_path) if line.get("tool") == "release_deposit"]
    assert len(sent) == 2 and len({s["meta"]["io.vocero/operation_id"] for s in sent}) == 1
    state = json.loads((tmp_path / "bookings.json").read_text())
    assert state["deposits"] == {"D5": "released"}


def test_a_page_never_finished_is_said_and_nothing_is_done(tmp_path: Path) -> None:
    with app(tmp_path, "2025-11-25", input_timeout_s=1.0) as client, \
            client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect("booker")
        say(pc, "release the deposit of STUCK5")
        said = say(pc, "done")  # ... but the provider never says the page is finished
        assert said == ("I didn't hear back that the page was finished, so I stopped there. "
                        "Nothing was changed."), said
        [ended] = pc.of_type("tool.status.v1")[-1:]
        assert (ended["status"], ended["reason_code"]) == ("rejected", "input_not_completed")
    sent = [line for line in recorded(tmp_path) if line.get("tool") == "release_deposit"]
    assert len(sent) == 1  # never sent again
    assert "deposits" not in json.loads((tmp_path / "bookings.json").read_text())


def test_unclear_answers_are_asked_again_twice_then_the_question_is_cancelled(
    tmp_path: Path,
) -> None:
    with app(tmp_path, "2026-07-28") as client, client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect("booker")
        asked = say(pc, "rate the dinner")
        [question] = pc.of_type("tool.input_required.v1")
        names = {f["name"] for f in question["fields"]}
        assert "card_number" not in names, "a secret-looking field never reaches the caller"
        assert asked.startswith("Bookings needs to know")
        assert say(pc, "it was lovely").startswith("Sorry, I didn't catch that.")
        assert say(pc, "twenty").startswith("That doesn't fit.")  # outside 1..5
        assert not [line for line in recorded(tmp_path) if line.get("kind") == "input"]
        assert say(pc, "hmm").startswith("I'll leave that for now.")
        assert pc.expect("session.state.v1")["data"]["payload"]["state"] == "LISTENING"
    [answer] = [line for line in recorded(tmp_path) if line.get("kind") == "input"]
    assert answer["action"] == "cancel"


@pytest.mark.parametrize("protocol", ["2026-07-28", "2025-11-25"])
def test_a_question_nobody_answers_runs_out_and_the_agent_says_nothing_was_done(
    tmp_path: Path, protocol: str
) -> None:
    with app(tmp_path, protocol, input_timeout_s=1.0) as client, \
            client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect("booker")
        assert say(pc, "book a table at R4").startswith("Bookings needs to know")
        asking = pc.of_type("response.created.v1")[-1]
        mark = len(pc.frames)
        # the caller says nothing; a second later the question is cancelled at the server
        told = pc.expect("response.created.v1")["data"]["payload"]
        assert told["turn_id"] == asking["turn_id"]  # it answers the turn that made the call
        assert told["generation_id"] != asking["generation_id"]
        done = pc.expect("response.completed.v1")["data"]["payload"]
        words = ("I didn't get an answer to my question in time, so I stopped there. "
                 "Nothing was changed.")
        assert (spoken(pc, mark), done["heard_text"], done["status"]) == (
            words, words, "completed")
        states = [f["data"]["payload"]["state"] for f in pc.frames[mark:]
                  if f["type"].endswith("session.state.v1")]
        assert states == ["AWAITING_CONFIRMATION", "LISTENING",  # the question ran out
                          "TOOL_RUNNING", "THINKING", "SPEAKING"], states  # its call ended
        assert pc.expect("session.state.v1")["data"]["payload"]["state"] == "LISTENING"
        [ended] = [f["data"]["payload"] for f in pc.frames[mark:]
                   if f["type"].endswith("tool.status.v1")]
        assert (ended["status"], ended["reason_code"]) == ("rejected", "input_timeout")
        # the caller carries on: the same request is asked afresh
        assert say(pc, "book a table at R4").startswith("Bookings needs to know")
        assert say(pc, "tomorrow, two people").startswith("To confirm:")
        assert "R4 is booked" in say(pc, "yes")
    answers = [line for line in recorded(tmp_path) if line.get("kind") == "input"]
    assert [a["action"] for a in answers] == ["cancel", "accept"]
    assert answers[0]["reason"] == "input_timeout"
    [booking] = booked(tmp_path).values()  # only the second request booked anything
    assert (booking["restaurant_id"], booking["party_size"]) == ("R4", 2)


def test_a_caller_speaking_when_the_question_runs_out_keeps_the_floor(tmp_path: Path) -> None:
    with app(tmp_path, "2026-07-28", input_timeout_s=1.0) as client, \
            client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect("booker")
        say(pc, "book a table at R5")
        mark = len(pc.frames)
        pc.send("input.speech_started.v1")  # the caller begins to speak...
        pc.expect("session.state.v1", lambda p: p["state"] == "TRANSCRIBING")
        pc.expect("tool.status.v1", lambda p: p["reason_code"] == "input_timeout")
        reply = say(pc, "what can you do")  # ... and the question ran out meanwhile
        assert reply == "I can help with bookings.", reply  # a request, not an answer
        assert "didn't get an answer" not in spoken(pc, mark)
        assert len(pc.of_type("response.created.v1")) == 2  # nothing said unasked
    answers = [line for line in recorded(tmp_path) if line.get("kind") == "input"]
    assert [(a["action"], a.get("reason")) for a in answers] == [("cancel", "input_timeout")]
    assert booked(tmp_path) == {}


def test_a_read_only_question_is_answered_without_a_read_back(tmp_path: Path) -> None:
    with app(tmp_path, "2025-11-25") as client, client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect("booker")
        say(pc, "rate the lunch")
        words = say(pc, "four")
        assert "To confirm" not in words
    [answer] = [line for line in recorded(tmp_path) if line.get("kind") == "input"]
    assert (answer["action"], answer["keys"]) == ("accept", ["rating"])
