"""Hypothesis-written client frames (``tests/security/test_decoder_fuzz.py``'s strategies:
deep nesting, huge and odd numbers, lone surrogates, every field of every client event given
values of every JSON type, broken text) sent over real WebSockets to a real ``vocero serve``,
one connection (one session) per example, while another caller completes a confirmed write on
the same process: it is read back, confirmed with a "yes" and committed, and reaches the owning
service exactly once. No garbage session is answered ``INTERNAL`` or closed with 1011, nothing
fails in the server's log, and the process stays up and ready."""

from __future__ import annotations

import threading
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from starlette.websockets import WebSocketDisconnect
from websockets.exceptions import ConnectionClosed

from tests.scaling.support import (
    Appointments,
    Config,
    Vocero,
    ask_to_move,
    client,
    say,
    status_of,
)
from tests.security.test_decoder_fuzz import KNOWN, SEQUENCE, SESSION_ID, frames
from tests.support.wsclient import ProtocolClient

pytestmark = pytest.mark.slow

EXAMPLES = 50
FUZZERS = ("bob-token", "frank-token", "grace-token")
"""The callers whose sessions are fed garbage (alice writes)."""
WRITER_S = 60.0
"""How long the writer may take in all (its steps wait on the server's answers)."""


class Writer(threading.Thread):
    """alice: a listing, a reschedule read back, then (once garbage is flowing) "yes" and the
    committed status; what happened is kept for the test to check."""

    def __init__(self, node: Vocero, fuzzed: Callable[[], int], flowing: threading.Event) -> None:
        super().__init__(name="writer", daemon=True)
        self.node = node
        self.fuzzed = fuzzed
        self.flowing = flowing
        self.error: BaseException | None = None
        self.result: dict[str, Any] = {}

    def run(self) -> None:
        try:
            with client(self.node, "alice-token") as alice:
                assert self.flowing.wait(WRITER_S)
                self.result["listed"] = say(alice, "list my appointments")["heard_text"]
                question = ask_to_move(alice, "APT-2001")
                self.result["fuzzed_at_yes"] = self.fuzzed()
                alice.send("input.text.v1", {"text": "yes"})
                committed = status_of(alice, "committed")
                self.result["fuzzed_at_commit"] = self.fuzzed()
                self.result["question"], self.result["committed"] = question, committed
                self.result["errors"] = [e["code"] for e in alice.of_type("error.v1")]
                self.result["session_id"] = alice.session_id
        except BaseException as exc:  # handed to the test, which fails with it
            self.error = exc


def feed(node: Vocero, token: str, sent: list[str]) -> tuple[list[str], int]:
    """One session fed ``sent`` (placeholders filled in), then closed: the error codes it was
    answered and its close code."""
    pc: ProtocolClient
    with client(node, token, timeout_s=10) as pc:
        close = 1000
        try:
            for text in sent:  # the placeholder sequence is the next one (send_raw counts it)
                text = text.replace(SESSION_ID, pc.session_id)
                pc.send_raw(text.replace(str(SEQUENCE), str(pc.sequence + 1)))
            pc.send("session.close.v1")
            close = pc.expect_close()
        except ConnectionClosed as closed:  # closed by the server while this was still sending
            close = closed.rcvd.code if closed.rcvd is not None else 1006
        except WebSocketDisconnect as disconnected:
            close = disconnected.code
    return [p["code"] for p in pc.of_type("error.v1")], close


def test_garbage_on_the_live_endpoint_leaves_a_confirmed_write_unharmed(tmp_path: Path) -> None:
    appointments = Appointments(tmp_path)
    appointments.start()
    config = Config(tmp_path, appointments)
    config.write()
    node = Vocero(tmp_path, f"sqlite:///{tmp_path / 'vocero.db'}", config.flags())
    answered: list[tuple[list[str], int]] = []
    flowing = threading.Event()
    writer = Writer(node, lambda: len(answered), flowing)
    try:
        node.start()
        writer.start()

        @settings(max_examples=EXAMPLES, deadline=None, database=None,
                  phases=(Phase.explicit, Phase.generate),  # no shrinking over the network:
                  suppress_health_check=list(HealthCheck))  # a failure shows as found
        @given(st.lists(frames(), min_size=1, max_size=6))
        @example([KNOWN[0]])  # what the adversarial pass found, always tried
        @example([KNOWN[1]])
        @example([KNOWN[2]])
        def garbage(sent: list[str]) -> None:
            codes, close = feed(node, FUZZERS[len(answered) % len(FUZZERS)], sent)
            answered.append((codes, close))
            flowing.set()
            assert "INTERNAL" not in codes
            assert close != 1011

        garbage()
        writer.join(WRITER_S)
        assert not writer.is_alive(), "the writer did not finish"
        if writer.error is not None:
            raise writer.error
        result = writer.result
        # the write went on while garbage flowed, and it was done once, as confirmed
        assert result["fuzzed_at_yes"] >= 1 and result["fuzzed_at_commit"] < len(answered)
        assert result["listed"] == "I found your appointments."
        assert result["committed"]["proposal_id"] == result["question"]["proposal_id"]
        assert result["errors"] == []
        [op] = [op for op in node.get(f"/v1/operations?session_id={result['session_id']}")[
            "items"] if op["proposal_id"]]
        assert op["status"] == "committed"
        writes = appointments.calls("reschedule_appointment")
        assert [w["meta"]["io.vocero/operation_id"] for w in writes] == [op["operation_id"]]
        assert set(appointments.receipts()) == {op["operation_id"]}
        versions = {k: v["version"] for k, v in appointments.state_data()["appointments"].items()}
        assert versions == {"APT-2001": 2, "APT-2002": 1, "APT-2003": 1, "APT-2004": 1}
        # every garbage session was answered, none with INTERNAL or 1011; the server is fine
        assert len(answered) >= EXAMPLES
        print(f"live_fuzz: {len(answered)} sessions, {Counter(c for cs, _ in answered for c in cs)}"
              f", closes {Counter(close for _, close in answered)}, yes after "
              f"{result['fuzzed_at_yes']}, committed after {result['fuzzed_at_commit']}")
        assert any(codes for codes, _ in answered)  # the garbage was refused, with codes
        assert node.process.poll() is None
        with urllib.request.urlopen(node.url + "/readyz", timeout=5) as ready:
            assert ready.status == 200
        assert node.events("relay.session_failed") == []
        assert node.events("session.failed") == []
    finally:
        node.stop()
        appointments.stop()
