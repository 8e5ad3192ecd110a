"""The browser protocol's guarantees (SPEC §2) over an impaired path (issue 46, item 2).

A real Vocero (the composition root on sim runners, served by uvicorn on a loopback socket, the
fixture appointments server over HTTP recording every ``tools/call``) is reached through
:class:`tests.support.netproxy.NetProxy`: 75 ms each way (RTT 150 ms) ± 40 ms of jitter, and,
per case, a bandwidth cap below the answer's real-time rate, a 2 s stall of both directions
mid-answer, or a cut (reset) of the connection mid-sentence. The caller is
:class:`tests.support.netplayer.Player`: it plays what it receives in real time and reports
``played_ms`` as it plays, through the same path.

Checked from the caller's side, with times taken on the caller's side:

* pacing: each audio frame that arrives brings the generation's received audio to at most
  ``max_lead_ms`` beyond the most the caller had reported played two minimum one-way delays
  earlier (the newest report the server could have had when it sent that frame);
* heard text: ``heard_text`` (and the session's history after a cut) is a prefix of what was
  spoken and holds no character whose audio had not begun playing by the most the caller
  reported;
* barge-in: ``output.stop_and_flush.v1`` arrives and no audio or text of that generation after
  it;
* a cut mid-sentence: the session resumes; its history holds the answer as heard and the next
  answer sees only that;
* a confirmed write whose connection is cut as soon as the "yes" reached the server runs once,
  also when the caller, back on the resumed session, says "yes" again.

ttfs (text sent → first audio received) and barge-in stop (speech hint sent → stop_and_flush
received) are printed per case as the caller experiences them (docs/slo.md).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import uvicorn

from tests.scaling.support import ADMIN, ADMIN_TOKEN, SCRIPT, Appointments, Config
from tests.support.db import migrated_copy
from tests.support.netplayer import Played, Player
from tests.support.netproxy import Impairment, NetProxy
from tests.support.polling import wait_for
from tests.support.servers import free_port
from vocero.app.server import create_app
from vocero.app.settings import Settings
from vocero.bench import network
from vocero.contracts.secrets import Secret

pytestmark = [pytest.mark.anyio, pytest.mark.process]
"""``process``: the fixture appointments server runs as a process, Vocero on a real socket."""

MAX_LEAD_MS = 400
"""The demo profile's ``max_lead_ms``."""
TOLERANCE_MS = 2.0
"""Reports are whole milliseconds; audio lengths are fractional."""
STORY = ("The fox walked along the river and kept on going, past the mill and the old bridge, "
         "until the evening came down over the valley and the lights of the town went on.")
MS_PER_CHAR = 15
"""About 2.6 s of speech."""
SCRIPT_NET: dict[str, Any] = {
    "tts": {"ms_per_char": MS_PER_CHAR, "chunk_ms": 100},
    "llm": [{"match": "tell me a story", "reply": STORY}, *SCRIPT["llm"]],
}
TOKEN = "alice-token"

LAGGY = Impairment("rtt150_jitter40", one_way_ms=75, jitter_ms=40)
CAPPED = Impairment("rtt150_jitter40_cap40kBps", one_way_ms=75, jitter_ms=40,
                    rate_bytes_s=40_000)
"""40 kB/s: below the answer's real-time rate (16 kHz PCM16 in base64 JSON, about 47 kB/s)."""
STALL_S = 2.0
WRITE_DELAY_MS = 600
"""How long the appointments server takes over a write: the cut falls while it is in flight."""
FIGURES: dict[str, dict[str, float]] = {}


@dataclass
class Served:
    port: int
    url: str
    appointments: Appointments


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder: Path = tmp_path_factory.mktemp("impaired")
    appointments = Appointments(folder, delays=f"reschedule_appointment={WRITE_DELAY_MS}")
    appointments.start()
    config = Config(folder, appointments, script=SCRIPT_NET)
    config.write()
    settings = Settings(
        runners="sim", db=migrated_copy(folder / "vocero.db", driver="sqlite+aiosqlite"),
        sim_script=str(folder / "script.yaml"), profiles=str(folder / "profiles"),
        identities=str(folder / "identities.yaml"), operator_token=Secret(ADMIN_TOKEN),
        followups_tick_s=0)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(
        create_app(settings), host="127.0.0.1", port=port, log_config=None, lifespan="on",
        ws_max_size=1024 * 1024, ws_per_message_deflate=False, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True, name="vocero-impaired")
    thread.start()
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            return httpx.get(url + "/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for("vocero ready", ready, timeout_s=60)
        yield Served(port, url, appointments)
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        appointments.stop()
        if FIGURES:
            print("\nimpaired network figures (ms, caller side):")
            for name, figures in FIGURES.items():
                print(f"  {name}: " + ", ".join(f"{k}={v:.0f}" for k, v in figures.items()))


def caller(proxy: NetProxy, resume_token: str = "") -> AbstractAsyncContextManager[Player]:
    """A player connected (or resumed) through ``proxy`` as Alice (the bench's caller)."""
    return network.caller(proxy, resume_token, token=TOKEN)


async def api(served: Served, path: str) -> Any:
    async with httpx.AsyncClient(base_url=served.url, headers=ADMIN) as http:
        response = await http.get(path)
        response.raise_for_status()
        return response.json()


# ------------------------------------------------------------------------------- checks


def assert_paced(played: Played, impairment: Impairment) -> float:
    """Every audio frame arrived within ``max_lead_ms`` of what the server could have known
    was played; returns the largest lead seen (ms)."""
    assert played.arrivals, "no audio arrived"
    lag = 2 * impairment.min_one_way_s
    worst = 0.0
    for at, received in played.arrivals:
        lead = received - played.reported_by(at - lag)
        worst = max(worst, lead)
        assert lead <= MAX_LEAD_MS + TOLERANCE_MS, (
            f"{received:.0f} ms received at {at:.3f}, {lead:.0f} ms ahead of the reports")
    return worst


def assert_heard_within_played(heard: str, played: Played) -> None:
    spoken = played.spoken()
    assert spoken.startswith(heard), (heard, spoken)
    most = max((ms for _, ms in played.reports), default=0)
    allowed = played.playable_text(most, MS_PER_CHAR)
    assert len(heard) <= len(allowed), (
        f"heard {heard!r} beyond what was played ({most} ms): {allowed!r}")


def assert_nothing_after_stop(player: Player, generation_id: str) -> None:
    frames = [f for _, f in player.frames]
    stop = next(i for i, f in enumerate(frames) if f["type"] == "vocero.output.stop_and_flush.v1"
                and f["data"]["payload"]["generation_id"] == generation_id)
    late = [f["type"] for f in frames[stop + 1:]
            if f["type"] in ("vocero.response.audio_delta.v1", "vocero.response.text_delta.v1")
            and f["data"]["payload"]["generation_id"] == generation_id]
    assert late == [], f"{len(late)} deltas of the stopped generation after stop_and_flush"


# -------------------------------------------------------------------------------- tests


async def ask_story(player: Player) -> tuple[str, Played, float]:
    """Ask for the story; (generation id, its playout, ttfs in ms as the caller sees it)."""
    mark = len(player.frames)
    await player.send("input.text.v1", {"text": "tell me a story"})
    asked = player.sent_at["input.text.v1"]
    generation_id = (await player.expect("response.created.v1", after=mark))["generation_id"]
    played: Played = await player.until(lambda: player.generations.get(generation_id))
    await player.until(lambda: played.arrivals)
    return generation_id, played, (played.arrivals[0][0] - asked) * 1000


async def barge_in(player: Player, generation_id: str, played: Played) -> float:
    """Interrupt once the bench's ``BARGE_AT_MS`` was played; check the stop; its time in ms."""
    stop_ms, done = await network.interrupt(player, generation_id, played)
    assert done["status"] == "interrupted"
    assert_nothing_after_stop(player, generation_id)
    assert_heard_within_played(done["heard_text"], played)
    assert done["heard_text"], "something was played and reported before the barge-in"
    return stop_ms


@pytest.mark.parametrize("impairment", [LAGGY, CAPPED], ids=lambda i: i.name)
async def test_pacing_heard_text_and_barge_in_hold(served: Served, impairment: Impairment) -> None:
    async with NetProxy(served.port, impairment) as proxy, caller(proxy) as player:
        generation_id, played, ttfs = await ask_story(player)
        stop = await barge_in(player, generation_id, played)
        lead = assert_paced(played, impairment)
    FIGURES[impairment.name] = {"ttfs": ttfs, "barge_in_stop": stop, "max_lead_seen": lead}


async def test_a_2s_stall_mid_answer_keeps_pacing_and_heard_text(served: Served) -> None:
    """Both directions held for 2 s while the answer plays: the caller plays out its buffer
    and starves; the server, without playout progress, stops sending, flushes
    (``output_stalled``) and ends the answer ``interrupted`` as heard (SPEC §2: nothing beyond
    the reports), or, when the reports come back in time, goes on and completes it heard whole
    (which one depends on a race with the server's 2 s no-progress limit). Never ``completed``
    with its heard text cut short. Barge-in works on the next answer."""
    async with NetProxy(served.port, LAGGY) as proxy, caller(proxy) as player:
        mark = len(player.frames)
        generation_id, played, ttfs = await ask_story(player)
        await player.until(lambda: played.played_ms >= 300)
        proxy.stall(STALL_S)
        done = await player.expect("response.completed.v1",
                                   lambda p: p["generation_id"] == generation_id, after=mark)
        assert_heard_within_played(done["heard_text"], played)
        if done["status"] == "completed":
            assert done["heard_text"] == played.spoken(), "completed means heard whole"
        else:
            assert done["status"] == "interrupted", done
            assert player.payloads("output.stop_and_flush.v1", mark) == [
                {"generation_id": generation_id, "reason": "output_stalled"}]
            assert_nothing_after_stop(player, generation_id)
        lead = assert_paced(played, LAGGY)
        second, again, ttfs_after = await ask_story(player)
        stop = await barge_in(player, second, again)
        lead = max(lead, assert_paced(again, LAGGY))
    FIGURES["rtt150_jitter40_stall2s"] = {
        "ttfs": ttfs, "ttfs_after_stall": ttfs_after, "barge_in_stop": stop, "max_lead_seen": lead,
        "heard_share_of_stalled_answer": 100 * len(done["heard_text"]) / len(played.spoken())}


async def test_a_cut_mid_sentence_resumes_with_the_history_as_heard(served: Served) -> None:
    async with NetProxy(served.port, LAGGY) as proxy:
        async with caller(proxy) as player:
            applied = player.applied
            mark = len(player.frames)
            await player.send("input.text.v1", {"text": "tell me a story"})
            created = await player.expect("response.created.v1", after=mark)
            played = await player.until(lambda: player.generations.get(created["generation_id"]))
            await player.until(lambda: played.played_ms >= 800)
            proxy.cut()
        session_id = applied["session_id"]

        def history_settled(body: dict[str, Any]) -> dict[str, Any] | None:
            return next((h for h in body["history"]
                         if h.get("generation_id") == created["generation_id"]
                         and h.get("status") not in (None, "", "streaming")), None)

        async with caller(proxy, applied["resume_token"]) as again:
            assert again.session_id == session_id
            entry = history_settled(await api(served, f"/v1/sessions/{session_id}"))
            assert entry is not None, "the cut answer is in the history"
            heard = entry["text"]
            assert_heard_within_played(heard, played)
            mark = len(again.frames)
            await again.send("input.text.v1", {"text": "what did you say"})
            done = await again.expect("response.completed.v1", after=mark)
            said = "".join(p["text"] for p in again.payloads("response.text_delta.v1", mark)
                           if p["generation_id"] == done["generation_id"])
            assert said == f"I said: {heard}".strip(), "the next answer sees only what was heard"


async def test_a_write_confirmed_just_before_a_cut_runs_once(served: Served) -> None:
    """The caller's "yes" reaches the server, which dispatches the write (the appointments
    server takes ``WRITE_DELAY_MS`` over it), and the connection is cut at that moment, before
    anything of the answer reaches the caller. The caller resumes and, having heard nothing,
    says "yes" again. The appointments server receives the write exactly once."""
    appointment = "APT-2002"
    async with NetProxy(served.port, LAGGY) as proxy:
        async with caller(proxy) as player:
            applied = player.applied
            session_id = applied["session_id"]
            mark = len(player.frames)
            await player.send("input.text.v1", {"text": "list my appointments"})
            await player.expect("response.completed.v1", after=mark)  # what a write reads back
            mark = len(player.frames)
            await player.send("input.text.v1",
                              {"text": f"move my appointment {appointment} to friday at 3pm"})
            await player.expect("tool.confirmation_required.v1", after=mark)
            await player.expect("response.completed.v1", after=mark)  # the read-back, played
            heard_before = len(player.frames)
            await player.send("input.text.v1", {"text": "yes"})
            await anyio.to_thread.run_sync(lambda: wait_for(
                "the write dispatched", lambda: writes(served, session_id), timeout_s=10))
            proxy.cut()
            outcome = [p for p in player.payloads("tool.status.v1", heard_before)
                       if p["status"] not in ("authorized", "dispatch_pending", "in_flight")]
            assert not outcome + player.payloads("response.completed.v1", heard_before), (
                "the cut came before the caller heard an outcome")
        done = await anyio.to_thread.run_sync(lambda: wait_for(
            "the write committed", lambda: [op for op in writes(served, session_id)
                                            if op["status"] == "committed"], timeout_s=20))
        async with caller(proxy, applied["resume_token"]) as again:
            assert again.session_id == session_id
            told = await again.expect("tool.status.v1",
                                      lambda p: p["proposal_id"] == done[0]["proposal_id"])
            assert told["status"] == "committed", "the resumed client learns the yes was applied"
            mark = len(again.frames)
            await again.send("input.text.v1", {"text": "yes"})
            await again.expect("response.completed.v1", after=mark)
        calls = [w for w in served.appointments.calls("reschedule_appointment")
                 if w["arguments"].get("appointment_id") == appointment]
        assert [w["meta"]["io.vocero/operation_id"] for w in calls] == [
            done[0]["operation_id"]], "the write ran exactly once"
        assert len(writes(served, session_id)) == 1


def writes(served: Served, session_id: str) -> list[dict[str, Any]]:
    """The session's write operations (those of a proposal)."""
    response = httpx.get(f"{served.url}/v1/operations", headers=ADMIN,
                         params={"session_id": session_id}, timeout=5)
    return [op for op in response.json()["items"] if op["proposal_id"]]


async def test_a_yes_that_meets_the_cut_is_applied_once_or_asked_again(served: Served) -> None:
    """The caller's "yes" reaches the server and the connection is cut at that very moment
    (before the server has acted on it). After the resume the client is told which happened:
    the write's ``tool.status.v1`` (it was applied), or the question again
    (``tool.confirmation_required.v1`` of the same proposal, read back anew), answered "yes".
    Never neither; the write runs exactly once."""
    appointment = "APT-2003"
    async with NetProxy(served.port, LAGGY) as proxy:
        async with caller(proxy) as player:
            applied = player.applied
            session_id = applied["session_id"]
            mark = len(player.frames)
            await player.send("input.text.v1", {"text": "list my appointments"})
            await player.expect("response.completed.v1", after=mark)
            mark = len(player.frames)
            await player.send("input.text.v1",
                              {"text": f"move my appointment {appointment} to monday at 3pm"})
            question = await player.expect("tool.confirmation_required.v1", after=mark)
            await player.expect("response.completed.v1", after=mark)  # the read-back, played
            await player.send("input.text.v1", {"text": "yes"})
            await proxy.wait_up_flushed()  # the yes reached the server: cut now
            proxy.cut()
        proposal = question["proposal_id"]

        def told(p: Player) -> str:
            if any(s["proposal_id"] == proposal for s in p.payloads("tool.status.v1")):
                return "applied"
            if any(q["proposal_id"] == proposal
                   for q in p.payloads("tool.confirmation_required.v1")):
                return "asked_again"
            return ""

        async with caller(proxy, applied["resume_token"]) as again:
            assert again.session_id == session_id
            outcome = await again.until(lambda: told(again), timeout_s=10)
            if outcome == "asked_again":
                [asked] = [q for q in again.payloads("tool.confirmation_required.v1")
                           if q["proposal_id"] == proposal]
                assert asked["revision"] == question["revision"]
                reread = await again.expect("response.completed.v1")
                assert "We got cut off." in reread["heard_text"]
                mark = len(again.frames)
                await again.send("input.text.v1", {"text": "yes"})
            else:
                mark = 0
            await again.expect("tool.status.v1", lambda p: p["proposal_id"] == proposal
                               and p["status"] == "committed", after=mark)
        FIGURES.setdefault("yes_at_the_cut", {})[outcome] = 1
        calls = [w for w in served.appointments.calls("reschedule_appointment")
                 if w["arguments"].get("appointment_id") == appointment]
        [write] = writes(served, session_id)
        assert [w["meta"]["io.vocero/operation_id"] for w in calls] == [
            write["operation_id"]], "the write ran exactly once"
