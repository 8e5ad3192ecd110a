"""The browser client against the real server (sim runners), in headless Chromium.

The spoken tests use Chromium's fake microphone playing ``fixtures/audio/barge_in.wav`` ("hello
there", 1.5 s of silence, "stop please"), so the page's capture worklet, resampler, playback
worklet and playout reports all run for real. Chromium loops the file; the assertions only look
at the first two turns. The other tests give the page a silent microphone, because Chromium's
default fake device beeps and the beeps would barge in.
"""

from __future__ import annotations

import datetime as dt
import json
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, WebSocketRoute
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

pytestmark = [pytest.mark.browser, pytest.mark.slow]

StartServer = Callable[[dict[str, Any]], Any]  # returns conftest.SimServer
OpenPage = Callable[..., Page]

BARGE_IN_WAV = Path(__file__).resolve().parents[2] / "fixtures" / "audio" / "barge_in.wav"
SCREENSHOT = Path("/tmp/vocero_browser.png")
LONG_REPLY = (
    "Hello! I am the Vocero demo agent, and I will keep talking for a while so that you can "
    "interrupt me."
)
BARGE_IN_SCRIPT: dict[str, Any] = {
    "stt": ["hello there", "stop please"],
    "tts": {"ms_per_char": 60},  # six seconds of answer: the second utterance lands inside it
    "llm": [
        {"match": "^hello", "reply": LONG_REPLY},
        {"match": "^stop", "reply": "Okay, I stopped."},
        {"match": ".*", "reply": "Sorry, I did not catch that."},
    ],
}
ECHO_SCRIPT: dict[str, Any] = {
    "tts": {"ms_per_char": 10},
    "llm": [{"match": ".*", "reply": "You said: {last_user}"}],
}
RESCHEDULE_SCRIPT: dict[str, Any] = {
    "tts": {"ms_per_char": 10},
    "llm": [
        {"match": "my appointments", "tool": "appointments.list", "arguments": {}, "reply": "Ok."},
        {
            "match": r"move (?P<apt>APT-\d+) to (?P<date>\S+) at (?P<time>\d\d:\d\d)",
            "tool": "appointments.reschedule",
            "arguments": {
                "appointment_id": "{apt}",
                "new_date": "{date}",
                "new_time": "{time}",
                "timezone": "Europe/Madrid",
            },
            "reply": "Done.",
        },
    ],
}


# ------------------------------------------------------------------------------- helpers


def _silence(path: Path, seconds: float = 1.0) -> Path:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(b"\0\0" * int(16000 * seconds))
    return path


def _connect(page: Page, url: str, turn_mode: str = "server_vad") -> None:
    """Opens the page, clicks Connect and waits until the session update has been applied."""
    if page.url != url + "/":
        page.goto(url)
    page.select_option("#turn-mode", turn_mode)
    page.click("#connect")
    _wait_for(page, "e => e.type === 'session.configuration_applied.v1'", count=2)


def _wait_for(
    page: Page, predicate: str, count: int = 1, timeout_ms: int = 15_000, log: str = "events"
) -> None:
    """Waits until ``count`` records of ``window.vocero[log]`` match a JS predicate over
    ``{type, payload}``; on timeout fails with the page's timeline."""
    try:
        page.wait_for_function(
            f"n => window.vocero.{log}.filter({predicate}).length >= n",
            arg=count,
            timeout=timeout_ms,
        )
    except PlaywrightTimeoutError:
        pytest.fail(f"no {count} {log} matching {predicate}; timeline:\n{_timeline(page)}")


def _hook(page: Page) -> dict[str, Any]:
    return page.evaluate("window.vocero")  # type: ignore[no-any-return]


def _of(records: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r["payload"] for r in records if r["type"] == kind]


def _timeline(page: Page) -> str:
    """Received (<-) and sent (->) frames by page time; most audio and playout reports left out."""
    hook = _hook(page)
    rows = [(e["t"], "<-", e) for e in hook["events"]] + [(s["t"], "->", s) for s in hook["sent"]]
    return "\n".join(
        f"{t / 1000:7.2f} {arrow} {r['type']} {json.dumps(r['payload'])[:160]}"
        for t, arrow, r in sorted(rows, key=lambda row: row[0])
        if r["type"] != "output.playout_progress.v1" and r["payload"].get("chunk_index", 0) % 5 == 0
    )


# --------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("speech_hint", [False, True], ids=["server-vad", "client-hint"])
def test_spoken_turn_then_barge_in(
    start_server: StartServer, open_page: OpenPage, speech_hint: bool
) -> None:
    server = start_server(BARGE_IN_SCRIPT)
    page = open_page(fake_audio=BARGE_IN_WAV)
    page.goto(server.url)
    page.set_checked("#speech-hint", speech_hint)
    _connect(page, server.url)
    _wait_for(
        page,
        "e => e.type === 'response.completed.v1' && e.payload.status === 'interrupted'",
        timeout_ms=30_000,
    )
    _wait_for(page, "e => e.type === 'transcript.final.v1'", count=2)
    page.screenshot(path=str(SCREENSHOT))
    hook = _hook(page)
    events, sent = hook["events"], hook["sent"]
    context = f"{_timeline(page)}\nserver:\n{server.log_tail()}"

    finals = [p["text"] for p in _of(events, "transcript.final.v1")]
    assert finals[:2] == ["hello there", "stop please"], context
    generation = _of(events, "response.created.v1")[0]["generation_id"]
    ours = [
        i
        for i, e in enumerate(events)
        if e["type"] == "response.audio_delta.v1" and e["payload"]["generation_id"] == generation
    ]
    assert len(ours) >= 3, context

    reports = _of(sent, "output.playout_progress.v1")
    played = [p["played_ms"] for p in reports if p["generation_id"] == generation]
    assert len(set(played)) >= 3, f"playout reports: {played}"
    assert played == sorted(played), f"played_ms went backwards: {played}"
    assert played[-1] > 0
    assert hook["playedMs"][generation] > 0

    stop_at = [e["type"] for e in events].index("output.stop_and_flush.v1")
    assert events[stop_at]["payload"]["generation_id"] == generation, context
    late = [events[i]["payload"] for i in ours if i > stop_at]
    assert not late, f"audio of the stopped generation after its stop: {late}\n{context}"
    completed = _of(events, "response.completed.v1")[0]
    assert completed["generation_id"] == generation
    assert completed["status"] == "interrupted"
    heard = completed["heard_text"]
    assert heard, context
    assert heard != LONG_REPLY
    assert LONG_REPLY.startswith(heard)
    assert page.text_content(".assistant.interrupted .heard") == f"Interrupted. Heard: “{heard}”"
    assert page.get_attribute("#state", "data-state") != "DISCONNECTED"
    assert page.locator(".user").all_text_contents()[:2] == ["hello there", "stop please"]
    assert page.locator(".user.partial").count() == 0  # finals replace their partials
    hints = [s["t"] for s in sent if s["type"] == "input.speech_started.v1"]
    if speech_hint:
        assert hints, context
        assert hints[0] <= events[stop_at]["t"], "the stop came before the page's hint"
    else:
        assert hints == []


def test_push_to_talk(start_server: StartServer, open_page: OpenPage) -> None:
    server = start_server(BARGE_IN_SCRIPT)
    page = open_page(fake_audio=BARGE_IN_WAV)
    _connect(page, server.url, turn_mode="push_to_talk")
    applied = _of(_hook(page)["events"], "session.configuration_applied.v1")[-1]
    assert applied["effective"]["turn_mode"] == "push_to_talk"
    page.wait_for_timeout(300)
    assert _hook(page)["sentAudioFrames"] == 0, "audio streamed before the button was pressed"

    page.hover("#talk")
    page.mouse.down()
    page.wait_for_timeout(1500)
    held = _hook(page)
    page.mouse.up()
    _wait_for(page, "e => e.type === 'transcript.final.v1'")

    hook = _hook(page)
    assert _of(held["events"], "transcript.final.v1") == [], "the turn ended before release"
    assert held["sentAudioFrames"] >= 50  # 20 ms frames over 1.5 s, give or take
    assert hook["sentAudioFrames"] <= held["sentAudioFrames"] + 5, "audio kept streaming"
    assert _of(hook["sent"], "audio.input.commit.v1") == [{}]
    assert _of(hook["events"], "transcript.final.v1")[0]["text"] == "hello there", server.log_tail()


def test_typed_turn(start_server: StartServer, open_page: OpenPage, tmp_path: Path) -> None:
    server = start_server(ECHO_SCRIPT)
    page = open_page(fake_audio=_silence(tmp_path / "silence.wav"))
    _connect(page, server.url)
    page.fill("#text", "what time is it")
    page.press("#text", "Enter")
    _wait_for(page, "e => e.type === 'response.completed.v1'")

    hook = _hook(page)
    assert _of(hook["sent"], "input.text.v1") == [{"text": "what time is it"}]
    assert page.text_content(".user") == "what time is it"
    assert page.text_content(".assistant .words") == "You said: what time is it"
    completed = _of(hook["events"], "response.completed.v1")[0]
    assert completed["status"] == "completed", server.log_tail()
    assert _of(hook["sent"], "output.playout_progress.v1")[-1]["buffered_ms"] == 0

    page.click("#close")
    page.wait_for_selector("#state[data-state=DISCONNECTED]")
    assert _of(_hook(page)["sent"], "session.close.v1") == [{}]


def test_bad_token_is_explained(
    start_server: StartServer, open_page: OpenPage, tmp_path: Path
) -> None:
    server = start_server(ECHO_SCRIPT)
    page = open_page(fake_audio=_silence(tmp_path / "silence.wav"))
    page.goto(server.url)
    page.fill("#token", "not-a-token")
    page.click("#connect")
    page.wait_for_selector("#errors:not([hidden])")
    page.wait_for_selector("#state[data-state=DISCONNECTED]")

    assert _of(_hook(page)["events"], "error.v1")[0]["code"] == "AUTH_DENIED"
    assert page.text_content("#errors") == "That access token was not accepted."
    assert "4401" in page.text_content(".note")  # type: ignore[operator]
    assert page.is_enabled("#connect")


def test_confirmation_prompt_renders_and_submits(
    start_server: StartServer, open_page: OpenPage, tmp_path: Path
) -> None:
    """The prompt is injected into the real connection (Playwright WebSocket routing), so this
    checks the page's side whether or not the server's policy path emits prompts yet. It also
    checks the envelope of every frame the page sent."""
    server = start_server(ECHO_SCRIPT)
    page = open_page(fake_audio=_silence(tmp_path / "silence.wav"))
    routes: list[WebSocketRoute] = []
    upstream: list[dict[str, Any]] = []

    def relay(route: WebSocketRoute) -> None:
        server_side = route.connect_to_server()

        def forward(message: str | bytes) -> None:
            upstream.append(json.loads(message))
            server_side.send(message)

        route.on_message(forward)
        server_side.on_message(route.send)
        routes.append(route)

    page.route_web_socket("**/v1/realtime", relay)
    _connect(page, server.url)
    session_id = _of(_hook(page)["events"], "session.configuration_applied.v1")[0]["session_id"]
    prompt = {
        "proposal_id": "prop_test",
        "revision": 2,
        "tool": "appointments.reschedule",
        "summary": "Move your boiler inspection to 5 December at 11:00?",
        "fields": {"appointment_id": "APT-1001", "new_date": "2026-12-05", "new_time": "11:00"},
        "expires_at": "2099-01-01T00:00:00Z",
    }
    frame = {
        "specversion": "1.0",
        "type": "vocero.tool.confirmation_required.v1",
        "id": "evt_test",
        "time": "2026-01-01T00:00:00Z",
        "source": "vocero",
        "subject": f"session/{session_id}",
        "traceparent": "",
        "data": {"session_id": session_id, "sequence": 1000, "payload": prompt},
    }
    routes[0].send(json.dumps(frame))

    page.wait_for_selector(".confirmation")
    assert page.text_content(".confirmation strong") == prompt["summary"]
    assert "APT-1001" in page.locator(".confirmation dd").all_text_contents()
    page.click(".confirmation button[data-decision=confirm]")
    _wait_for(page, "s => s.type === 'tool.confirmation_submitted.v1'", log="sent")
    assert page.is_disabled(".confirmation button[data-decision=reject]")

    submitted = [f for f in upstream if f["type"] == "vocero.tool.confirmation_submitted.v1"]
    assert [f["data"]["payload"] for f in submitted] == [
        {"proposal_id": "prop_test", "revision": 2, "decision": "confirm"}
    ]
    assert [f["data"]["sequence"] for f in upstream] == list(range(1, len(upstream) + 1))
    assert upstream[0]["data"]["session_id"] == ""
    assert {f["data"]["session_id"] for f in upstream[1:]} == {session_id}
    assert {(f["specversion"], f["source"]) for f in upstream} == {("1.0", "web-client")}


def test_server_questions_render_a_link_only_when_it_is_safe(
    start_server: StartServer, open_page: OpenPage, tmp_path: Path
) -> None:
    """``tool.input_required.v1`` injected into the real connection: a form question lists its
    fields; a URL question shows its link with the server named, opened without an opener; a
    link that is not https (off loopback) is not made a link at all."""
    server = start_server(ECHO_SCRIPT)
    page = open_page(fake_audio=_silence(tmp_path / "silence.wav"))
    routes: list[WebSocketRoute] = []

    def relay(route: WebSocketRoute) -> None:
        server_side = route.connect_to_server()
        route.on_message(server_side.send)
        server_side.on_message(route.send)
        routes.append(route)

    page.route_web_socket("**/v1/realtime", relay)
    _connect(page, server.url)
    session_id = _of(_hook(page)["events"], "session.configuration_applied.v1")[0]["session_id"]

    def inject(sequence: int, payload: dict[str, Any]) -> None:
        routes[0].send(json.dumps({
            "specversion": "1.0", "type": "vocero.tool.input_required.v1",
            "id": f"evt_{sequence}", "time": "2026-01-01T00:00:00Z", "source": "vocero",
            "subject": f"session/{session_id}", "traceparent": "",
            "data": {"session_id": session_id, "sequence": sequence, "payload": payload},
        }))  # fmt: skip

    base = {"server": "bookings", "tool": "bookings.book", "link": None}
    inject(1000, {**base, "question_id": "q_form", "mode": "form",
                  "fields": [{"name": "party_size", "title": "People"}]})  # fmt: skip
    page.wait_for_selector("[data-key='question:q_form'] li")
    assert page.locator("[data-key='question:q_form'] li").all_text_contents() == ["People"]

    url = "https://pay.example.com/approve/O7"
    inject(1001, {**base, "question_id": "q_url", "mode": "url", "fields": [],
                  "link": {"server": "bookings", "url": url, "message": "Approve the deposit."}})
    link = page.wait_for_selector("[data-key='question:q_url'] a")
    assert link.get_attribute("href") == url
    assert link.get_attribute("rel") == "noopener noreferrer"
    assert link.text_content() == f"Open bookings: {url}"

    inject(1002, {**base, "question_id": "q_bad", "mode": "url", "fields": [],
                  "link": {"server": "bookings", "url": "http://evil.example/x", "message": ""}})
    page.wait_for_selector("[data-key='question:q_bad']")
    assert page.locator("[data-key='question:q_bad'] a").count() == 0


def test_confirmation_prompt_from_server(
    start_server: StartServer, open_page: OpenPage, tmp_path: Path
) -> None:
    """The same prompt through the server's policy path (a read first: the reschedule needs the
    appointment version it shows). The server must ask: anything else fails the test."""
    server = start_server(RESCHEDULE_SCRIPT)
    page = open_page(fake_audio=_silence(tmp_path / "silence.wav"))
    _connect(page, server.url)
    page.fill("#text", "list my appointments")
    page.press("#text", "Enter")
    _wait_for(page, "e => e.type === 'response.completed.v1'")
    lookups = _of(_hook(page)["events"], "tool.status.v1")
    assert lookups and {s["kind"] for s in lookups} == {"lookup"}, lookups
    shown = page.locator("#conversation .tool").all_text_contents()
    assert shown == ["Looked it up"], f"a read is shown as a lookup, never as an action: {shown}"
    day = (dt.date.today() + dt.timedelta(days=10)).isoformat()
    page.fill("#text", f"move APT-1001 to {day} at 11:00")
    page.press("#text", "Enter")
    _wait_for(page, "e => e.type === 'response.completed.v1'", count=2)

    events = _hook(page)["events"]
    prompts = _of(events, "tool.confirmation_required.v1")
    statuses = _of(events, "tool.status.v1")
    assert prompts, f"the server did not ask for confirmation; tool statuses: {statuses}"
    assert page.text_content(".confirmation strong") == prompts[0]["summary"]
    page.click(".confirmation button[data-decision=reject]")
    _wait_for(page, "s => s.type === 'tool.confirmation_submitted.v1'", log="sent")
    assert page.is_disabled(".confirmation button[data-decision=confirm]")
    submitted = _of(_hook(page)["sent"], "tool.confirmation_submitted.v1")
    expected = {k: prompts[0][k] for k in ("proposal_id", "revision")} | {"decision": "reject"}
    assert submitted == [expected]

    # The write, asked again and confirmed: its statuses are shown as an action's.
    page.fill("#text", f"move APT-1001 to {day} at 11:00")
    page.press("#text", "Enter")
    _wait_for(page, "e => e.type === 'tool.confirmation_required.v1'", count=2)
    page.locator(".confirmation button[data-decision=confirm]").last.click()
    _wait_for(page, "e => e.type === 'tool.status.v1' && e.payload.status === 'committed' "
                    "&& e.payload.kind === 'action'")
    writes = page.locator("#conversation .tool:not(.lookup)").all_text_contents()
    assert "Action committed" in writes, writes
    assert all(w.startswith("Action ") for w in writes), writes
    assert page.locator("#conversation .tool.lookup").all_text_contents() == ["Looked it up"]
