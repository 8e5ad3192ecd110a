"""``vocero bench phone``: barge-in on the phone (SPEC §10), through the real telephony
WebSocket of a ``vocero serve`` on the sim runners.

One call, answered by the signed Voice webhook like any (``vocero.evals.phone``): the caller asks
for a long answer, and once ``HEARD_MS`` of it has played (marks are echoed in real time, as a
phone plays the audio) speaks over it for ``OVER_MS``. Per barge-in:

* ``speech_to_clear_ms``: the first ``media`` frame of the caller's speech sent → ``clear``
  received (the server's VAD, ``min_interruption_ms``, the stop and the carrier leg together);
* ``stale_media``: ``media`` frames of the stopped generation received after the ``clear``: any
  frame while the caller still speaks over it (no answer can begin before its words end) or
  followed by a mark naming that generation (goal 0).

The caller's words over the agent are the next "ask" (the sim STT returns them in order), so the
agent answers at length again and the next barge-in follows.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import yaml

from vocero.bench.stats import percentiles
from vocero.evals.phone import Carrier, answer_call, open_stream, to_ulaw
from vocero.evals.server import Server

PHONE = "+15550100123"
ASK = "tell me about the lighthouse"
LONG_REPLY = ("The lighthouse stands at the end of the north pier. It was built from grey stone "
              "more than a century ago, and its lamp still turns every night so that the boats "
              "coming home late can find the harbour mouth even in fog and rain.")
HEARD_MS = 600
"""How much of the answer has played when the caller speaks over it."""
OVER_MS = 1000
"""How long the caller speaks over the agent."""
MIN_INTERRUPTION_MS = 200
ROUND_TIMEOUT_S = 30.0


def _files(work: Path, n: int) -> tuple[Path, Path, Path]:
    profiles = work / "profiles"
    profiles.mkdir()
    (profiles / "bench.yaml").write_text(yaml.safe_dump({
        "id": "bench-phone", "version": "1", "match": {"tenant": "bench"}, "locale": "en-US",
        "min_interruption_ms": MIN_INTERRUPTION_MS, "max_lead_ms": 400, "word_budget": 80,
        "instructions": "You answer the phone.", "mcp_servers": {}, "tools": [],
    }))
    identities = work / "identities.yaml"
    identities.write_text(yaml.safe_dump({"callers": [{
        "token": "bench-phone-caller", "subject": "bench-caller", "tenant": "bench",
        "roles": ["member"], "scopes": [], "timezone": "UTC", "phone": PHONE}]}))
    script = work / "sim.yaml"
    script.write_text(yaml.safe_dump({
        "stt": [ASK] * (n + 2), "tts": {"ms_per_char": 20},
        "llm": [{"match": "lighthouse", "reply": LONG_REPLY},
                {"match": ".*", "reply": "I can tell you about the lighthouse."}]}))
    return profiles, identities, script


def _tone(ms: int) -> list[bytes]:
    """20 ms μ-law frames of a 300 Hz tone at 8 kHz (speech to the sim VAD)."""
    import numpy as np

    t = np.arange(16_000 * ms // 1000) / 16_000
    ulaw = to_ulaw((0.3 * np.sin(2 * math.pi * 300.0 * t) * 32767).astype("<i2").tobytes())
    return [ulaw[i:i + 160] for i in range(0, len(ulaw), 160)]


SILENCE = b"\xff" * 160


def _speak(carrier: Carrier, frames: list[bytes]) -> None:
    start = time.monotonic()
    for index, frame in enumerate(frames):
        delay = start + index * 0.02 - time.monotonic()
        if delay > 0:
            time.sleep(delay)  # real-time pacing of the caller's audio
        carrier.media(frame)


def _wait(carrier: Carrier, what: str, check: Any, timeout_s: float = ROUND_TIMEOUT_S) -> Any:
    deadline = time.monotonic() + timeout_s
    with carrier.changed:
        while not (found := check()):
            left = deadline - time.monotonic()
            if left <= 0 or carrier.closed:
                raise TimeoutError(f"phone bench: no {what} within {timeout_s:.0f} s")
            carrier.changed.wait(min(left, 0.02))
        return found


def _run(n: int) -> dict[str, Any]:
    delays: list[float] = []
    stale: list[int] = []
    with tempfile.TemporaryDirectory(prefix="vocero-bench-phone-") as tmp:
        work = Path(tmp)
        profiles, identities, script = _files(work, n)
        server = Server(runners="sim", profiles=profiles, identities=identities, work=work,
                        sim_script=str(script), telephony=True)
        try:
            server.wait_ready()
            call_sid = "CA" + "b" * 32
            url, ticket = answer_call(server.base, server.base, server.twilio_auth_token, PHONE,
                                      call_sid)
            carrier = Carrier(open_stream(url), call_sid)
            carrier.start(ticket)
            speech, over = _tone(400), _tone(OVER_MS)
            _speak(carrier, speech + [SILENCE] * 30)  # the first ask
            for _ in range(n):
                started = time.time()
                _wait(carrier, "answer", lambda s=started: carrier.played_ms(s) >= HEARD_MS)
                with carrier.changed:
                    clears = len(carrier.clears)
                spoke_at = time.time()
                # The caller speaks over the answer (its words are the next ask).
                talker = _Talker(carrier, over + [SILENCE] * 30)
                talker.start()
                at, generation = _wait(
                    carrier, "clear",
                    lambda c=clears: carrier.clears[c] if len(carrier.clears) > c else None)
                delays.append(at - spoke_at)
                talker.join()
                words_end = spoke_at + OVER_MS / 1000
                with carrier.changed:
                    late = [f for f in carrier.frames if f.at > at and (
                        f.at <= words_end or f.generation == generation)]
                    late_marks = [m for m_at, m in carrier.marks
                                  if m_at > at and m.split("@")[0] == generation]
                stale.append(len(late) + len(late_marks))
            carrier.hang_up()
        finally:
            server.stop()
    return {
        "barge_ins": len(delays),
        "speech_to_clear_ms": percentiles(delays, scale=1000, digits=1),
        "stale_media_after_clear": {"total": sum(stale), "max_per_barge_in": max(stale or [0])},
        "min_interruption_ms": MIN_INTERRUPTION_MS,
        "heard_before_barge_ms": HEARD_MS,
        "runners": "sim",
        "transport": "twilio media stream over a real vocero serve (loopback)",
    }


class _Talker:
    def __init__(self, carrier: Carrier, frames: list[bytes]) -> None:
        import threading

        self._thread = threading.Thread(target=_speak, args=(carrier, frames), daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self) -> None:
        self._thread.join()


async def phone(args: argparse.Namespace) -> dict[str, Any]:
    n = max(1, int(getattr(args, "n", 50)))
    result: dict[str, Any] = await anyio.to_thread.run_sync(_run, n)
    return result
