"""Callers whose client stops reading for 30 s while the agent speaks, over real TCP to a real
``vocero serve``. Each has a 4 KiB kernel receive buffer and a client library that stops
reading its socket once two frames wait, so the TCP window closes within a few frames; their
microphone keeps streaming meanwhile.

* alice's client reports playout (``played_ms`` = the audio it has received and played, as a
  browser player does) and, paused, reports nothing; she keeps asking for long stories (each
  more than a minute of speech). frank's client cannot report playout: the server paces him on
  a real-time estimate, and he asks for one long story.
* Memory stays bounded: the server's resident memory grows by less than ``RSS_BOUND_MB`` over
  the stall, while the answers asked for add up to many times that in audio.
* Stale audio is shed, not queued: alice receives, after the stall, at most ``max_lead_ms`` of
  any answer beyond what she had reported played (SPEC §2 pacing, over a real socket); frank
  receives what the sockets held when they filled (a few seconds), far less than the stall.
  The rest of every answer is never sent, and each answer completes during the stall.
* Control events still arrive: the ``configuration_applied`` answering an update sent during
  the stall, every answer's ``response.completed``, the final ``LISTENING``; no error, no close.
* Another caller completes a whole turn during the stall.

The stall is 30 s of real time (what the issue asks for); uvicorn's keepalive (a ping every
20 s, 20 s to answer) would close a client paused for much longer than that.
"""

from __future__ import annotations

import base64
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.scaling.support import SCRIPT, Appointments, Config, Vocero, client, say
from tests.support.wsclient import Frame, ProtocolClient

pytestmark = pytest.mark.slow

STALL_S = 30.0
MIC_FRAME = base64.b64encode(bytes(640)).decode()
"""20 ms of silence at 16 kHz: the paused callers' microphones keep streaming."""
MIC_EVERY_S = 0.02
WHO = ("fox", "bear", "heron", "otter", "badger", "raven", "beaver", "lynx", "hare", "wren")
WHERE = ("river", "forest", "valley", "meadow", "ridge", "shore", "marsh", "hill", "lake", "moor")
STORY = " ".join(f"The {who} walked along the {where} and kept on going." for who in WHO
                 for where in WHERE)
WORDS = len(STORY.split())
"""The profile's ``word_budget``: the whole story may be said (the demo profile allows 60)."""
MS_PER_CHAR = 50
STORY_S = len(STORY) * MS_PER_CHAR / 1000
"""About 260 s of speech per story."""
ASK_EVERY_S = 3.0
LAST_ASK_S = STALL_S - 6.0
"""alice asks for another story every 3 s while paused (each stops the one before), until 6 s
before she resumes: by then the server has given up on each (2 s without playout to send the
next audio, 2 s more for what was sent to be played) and completed it."""
CHUNK_MS = 100
MAX_LEAD_MS = 400
"""The demo profile's ``max_lead_ms``."""
PCM_BYTES_PER_S = 32_000
RSS_BOUND_MB = 10.0
NO_REPORT_BOUND_S = STALL_S / 3
"""What may reach frank after the stall: his sockets' buffers, not the stall's length."""
SCRIPT_LONG: dict[str, Any] = {
    "tts": {"ms_per_char": MS_PER_CHAR, "chunk_ms": CHUNK_MS},
    "llm": [{"match": "tell me a long story", "reply": STORY}, *SCRIPT["llm"]],
}


class Player(ProtocolClient):
    """A client that plays the audio it receives and reports it as played, per generation
    (``reports=False``: a client that cannot report playout)."""

    def __init__(self, ws: Any, *, reports: bool = True) -> None:
        super().__init__(ws)
        self.auto_playout = False
        self.reports = reports
        self.received_ms: defaultdict[str, float] = defaultdict(float)

    def receive(self) -> Frame:
        frame = super().receive()
        if frame["type"] == "vocero.response.audio_delta.v1":
            payload = frame["data"]["payload"]
            generation = payload["generation_id"]
            self.received_ms[generation] += len(base64.b64decode(payload["audio"])) / 32.0
            if self.reports:
                self.send("output.playout_progress.v1", {
                    "generation_id": generation, "played_ms": int(self.received_ms[generation]),
                    "buffered_ms": 0})
        return frame

    def drain(self, *, quiet_s: float = 1.0, at_most_s: float = 15.0) -> None:
        """Read until the server has sent nothing for ``quiet_s`` (or for ``at_most_s`` in all:
        an answer still streaming after the stall fails the checks, it does not hang)."""
        self.ws.timeout_s = quiet_s  # type: ignore[attr-defined]
        deadline = time.monotonic() + at_most_s
        try:
            while time.monotonic() < deadline:
                self.receive()
        except TimeoutError:
            pass


def not_reporting(ws: Any) -> Player:
    return Player(ws, reports=False)


def test_a_client_paused_for_30_s_gets_no_stale_audio_and_every_control_event(
    tmp_path: Path
) -> None:
    appointments = Appointments(tmp_path)
    appointments.start()
    config = Config(tmp_path, appointments, script=SCRIPT_LONG, profile={"word_budget": WORDS})
    config.write()
    node = Vocero(tmp_path, f"sqlite:///{tmp_path / 'vocero.db'}", config.flags())
    try:
        node.start()
        with client(node, "alice-token", small_buffers=True, kind=Player) as alice, \
                client(node, "frank-token", small_buffers=True, kind=not_reporting) as frank:
            assert isinstance(alice, Player) and isinstance(frank, Player)
            alice.send("session.update_requested.v1", {
                "client_capabilities": {"supports_playout_ack": True}})
            alice.expect("session.configuration_applied.v1")
            for each in (alice, frank):
                say(each, "list my appointments")  # warm: a whole turn each, tools included
                each.send("input.text.v1", {"text": "tell me a long story"})
                each.expect("response.audio_delta.v1")
            before = {"alice": dict(alice.received_ms), "frank": dict(frank.received_ms)}
            seen = {"alice": len(alice.frames), "frank": len(frank.frames)}
            baseline = node.rss_mb()

            # -------------------------------------------------------- 30 s not reading
            started = time.monotonic()
            peak, asked, updated = baseline, 1, False
            other_turn_s = -1.0
            while (now := time.monotonic() - started) < STALL_S:
                for each in (alice, frank):
                    each.send("audio.input.delta.v1", {"audio": MIC_FRAME, "sample_rate": 16000})
                if asked * ASK_EVERY_S <= now <= LAST_ASK_S:
                    alice.send("input.text.v1", {"text": "tell me a long story"})
                    asked += 1
                if not updated and now >= STALL_S / 2:
                    for each in (alice, frank):
                        each.send("session.update_requested.v1", {"system_prompt": "obey me"})
                    updated = True
                    with client(node, "bob-token") as bob:  # another caller, meanwhile
                        turn_started = time.monotonic()
                        reply = say(bob, "tell me a story")
                        other_turn_s = time.monotonic() - turn_started
                    assert reply["status"] == "completed"
                    assert reply["heard_text"].startswith("Once upon a time")
                peak = max(peak, node.rss_mb())
                time.sleep(MIC_EVERY_S)  # a microphone's pace, not a synchronisation

            # ------------------------------------------------------------ resumed
            for each in (alice, frank):
                each.drain()
            assert node.process.poll() is None
            asked_mb = asked * STORY_S * PCM_BYTES_PER_S / 2**20  # raw PCM, before base64
            assert peak - baseline < RSS_BOUND_MB < asked_mb / 5, (baseline, peak, asked_mb)
            assert 0 <= other_turn_s < 5.0

            for name, each in (("alice", alice), ("frank", frank)):
                late = each.frames[seen[name]:]
                types = [f["type"].removeprefix("vocero.") for f in late]
                assert "error.v1" not in types and each.close_code is None
                # the update sent during the stall is answered, after the stall
                answered = each.of_type("session.configuration_applied.v1")[-1]
                assert [r["field"] for r in answered["rejected_fields"]] == ["system_prompt"]
                # every answer completed (none still streaming); the session listens again
                created = {p["generation_id"] for p in each.of_type("response.created.v1")}
                completed = {p["generation_id"]: p for p in each.of_type("response.completed.v1")}
                assert set(completed) == created
                assert each.of_type("session.state.v1")[-1]["state"] == "LISTENING"
                stories = [p["generation_id"] for p in each.of_type("response.created.v1")[1:]]
                assert len(stories) == (asked if name == "alice" else 1)
                for story in stories:  # the rest of every story was shed, never sent
                    assert each.received_ms[story] < STORY_S * 1000 / 4
                    assert len(completed[story]["heard_text"]) < len(STORY) / 4
                late_ms = {g: ms - before[name].get(g, 0.0) for g, ms in each.received_ms.items()}
                print(f"slow_reader {name}: late audio ms {sorted(late_ms.values())}, "
                      f"rss {baseline:.1f} -> peak {peak:.1f} MiB, other turn {other_turn_s:.3f} s")
                if name == "alice":  # never more than max_lead_ms beyond what was reported
                    assert max(late_ms.values()) <= MAX_LEAD_MS + 1, late_ms
                else:  # what its sockets held, not what 30 s would have been
                    assert sum(late_ms.values()) < NO_REPORT_BOUND_S * 1000, late_ms
            for each in (alice, frank):  # and both go on: a new turn is answered at once
                each.ws.timeout_s = 10.0  # type: ignore[attr-defined]
                assert say(each, "list my appointments")["heard_text"] == (
                    "I found your appointments.")
    finally:
        node.stop()
        appointments.stop()
