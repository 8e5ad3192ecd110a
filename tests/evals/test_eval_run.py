"""``vocero eval`` end to end with the simulators: a small scenario file passes (exit 0); with
one expected effect changed it fails (exit 1) naming what was expected and what happened; the
HTML report opens in headless Chromium without a console error.

The report's screenshot is written to the test's tmp dir (``eval-report.png``);
docs/screenshots/eval-report.png is a copy of it."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from playwright.sync_api import sync_playwright

from tests.support.servers import ServerProcess, free_port

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = Path(__file__).parent / "scenarios"
CHROMIUM = "/usr/bin/chromium"
RUN_TIMEOUT_S = 300
"""A server start with the simulators takes 3 s alone and 30 s on a loaded 2-core machine."""

pytestmark = [pytest.mark.slow, pytest.mark.timeout(RUN_TIMEOUT_S + 60)]
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


def _eval(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vocero", "eval", *args, "--runners", "sim"],
                          cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)


@pytest.fixture(scope="module")
def passing(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str],
                                                               Path]:
    out = tmp_path_factory.mktemp("passing")
    run = _eval(str(SCENARIOS), "--junit", str(out / "out.xml"), "--report", str(out / "report"))
    return run, out


@pytest.fixture(scope="module")
def failing(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str],
                                                               Path]:
    """The same file with one expected effect changed: the order asked for is A123, the
    expectation now says A999."""
    out = tmp_path_factory.mktemp("failing")
    shutil.copytree(SCENARIOS, out / "scenarios")
    file = out / "scenarios" / "orders.yaml"
    text = file.read_text()
    assert "arguments: {order_id: A123}" in text
    file.write_text(text.replace("arguments: {order_id: A123}", "arguments: {order_id: A999}"))
    run = _eval(str(out / "scenarios"), "--junit", str(out / "out.xml"),
                "--report", str(out / "report"))
    return run, out


def test_the_scenarios_pass(passing: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    run, out = passing
    assert run.returncode == 0, run.stdout + run.stderr
    for name in ("order-status", "reschedule", "barge-in"):
        assert f"PASS orders/{name}" in run.stdout
    assert "3/3 scenarios passed" in run.stdout
    suite = ET.parse(out / "out.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures")) == ("3", "0")
    report = json.loads((out / "report" / "report.json").read_text())
    assert (report["passed"], report["total"]) == (3, 3)
    order, reschedule, barge = report["scenarios"]
    first = order["turns"][0]
    assert first["heard_text"] == "Order A123 is shipped."
    assert [(u["kind"], u["disposition"]) for u in first["units"]] == [("tool_fact", "admitted")]
    assert first["tools"] == [{"server": "orders", "tool": "get_order_status",
                               "arguments": {"order_id": "A123"}, "status": "ok"}]
    assert first["ttfa_ms"] is not None and (out / "report" / first["audio"]["agent"]).is_file()
    assert order["turns"][1]["skipped"]  # if_asked: the agent did not ask which day
    assert reschedule["operations"][0]["status"] == "committed"
    assert reschedule["turns"][1]["confirmations"][0]["tool"] == "appointments.reschedule"
    assert barge["turns"][0]["stops"][0]["reason"] == "barge_in"
    assert barge["turns"][0]["statuses"][0] == "interrupted"
    # barge_in_after_ms: 800 counts audio played in real time, not audio received (the sim
    # synthesizes far faster than speech), so the caller spoke 800 ms after the first audio
    spoke = barge["turns"][0]["barge"]
    assert spoke["heard_ms"] >= 800 and spoke["after_first_audio_ms"] >= 780, spoke


def test_a_changed_expected_effect_fails_with_expected_and_happened(
    failing: tuple[subprocess.CompletedProcess[str], Path]
) -> None:
    run, out = failing
    assert run.returncode == 1, run.stdout + run.stderr
    expected = (
        "FAIL orders/order-status turn 1: tools get_order_status\n"
        "  expected: 1 call with {order_id: A999}\n"
        "  happened: 1 call with {order_id: A123}\n"
        "  transcript:\n"
        "    caller: What is the status of order A123?\n"
        "    agent:  Order A123 is shipped.\n"
    )
    assert expected in run.stdout
    assert "PASS orders/reschedule" in run.stdout and "2/3 scenarios passed" in run.stdout
    suite = ET.parse(out / "out.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    failure = suite.find("testcase[@name='order-status']/failure")
    assert failure is not None and "expected: 1 call with {order_id: A999}" in (failure.text or "")


@pytest.fixture
def report_url(failing: tuple[subprocess.CompletedProcess[str], Path]) -> Iterator[str]:
    folder = failing[1] / "report"
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/index.html"
    server.shutdown()
    server.server_close()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.browser
def test_the_html_report_in_headless_chromium(report_url: str, tmp_path: Path) -> None:
    problems: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(report_url, wait_until="load")
        summary = page.text_content("#summary") or ""
        sections = page.locator("section.scenario").count()
        failed = page.locator("section.fail").count()
        failure_text = page.text_content("section.fail pre.failure") or ""
        body = page.text_content("body") or ""
        players = page.locator("audio").count()
        scripts = page.locator("script").count()
        csp = page.get_attribute("meta[http-equiv='Content-Security-Policy']", "content") or ""
        duration = page.evaluate(
            "async () => { const a = document.querySelector('audio'); a.preload = 'auto';"
            " a.load(); await new Promise(r => a.addEventListener('loadedmetadata', r,"
            " {once: true})); return a.duration; }")
        page.screenshot(path=str(tmp_path / "eval-report.png"), full_page=True)
        browser.close()
    assert problems == []
    assert "2 of 3 scenarios passed" in summary
    assert (sections, failed) == (3, 1)
    assert "expected: 1 call with {order_id: A999}" in failure_text
    for text in ("What is the status of order A123?", "Order A123 is shipped.", "tool_fact",
                 "admitted", "readback", "get_order_status", "reschedule_appointment",
                 "first audio", "barge-in stop", "interrupted", "committed"):
        assert text in body, text
    assert players >= 5 and scripts == 0
    assert "default-src 'none'" in csp
    assert duration > 0


def test_audio_mode_streams_the_callers_synthesized_line(tmp_path: Path) -> None:
    """``--mode audio``: Piper speaks the line (with its pause and noise) in 20 ms frames in real
    time; the simulated STT's transcript is the turn's, and both sides' WAVs are written."""
    run = _eval(str(Path(__file__).parent / "audio"), "--mode", "audio",
                "--report", str(tmp_path / "report"))
    assert run.returncode == 0, run.stdout + run.stderr
    turn = json.loads((tmp_path / "report" / "report.json").read_text())["scenarios"][0][
        "turns"][0]
    assert turn["transcripts"] == ["what is the status of order A123"]
    assert turn["heard_text"] == "Order A123 is shipped."
    caller = tmp_path / "report" / turn["audio"]["caller"]
    assert caller.stat().st_size > 16_000 * 2  # over a second of speech at 16 kHz
    assert (tmp_path / "report" / turn["audio"]["agent"]).is_file()
    spoken_ms = (caller.stat().st_size - 44) / 32
    assert 0 < turn["ttfa_ms"] < spoken_ms, "from the end of the caller's words, not their start"


def test_a_streamable_http_server_is_recorded_through_the_proxy(tmp_path: Path) -> None:
    """The profile's orders server over streamable HTTP: eval reaches it through its loopback
    recording proxy, so the tool expectation sees the call."""
    port = free_port()
    server = ServerProcess("orders server", [
        sys.executable, str(REPO / "fixtures" / "mcp_servers" / "orders_server.py"),
        "--transport", "http", "--port", str(port)], port=port, cwd=REPO)
    server.spawn().wait_ready()
    profiles = tmp_path / "profiles"
    shutil.copytree(REPO / "fixtures" / "profiles", profiles)
    for file in profiles.glob("*.yaml"):
        profile = yaml.safe_load(file.read_text())
        if "orders" in profile.get("mcp_servers", {}):
            profile["mcp_servers"]["orders"] = {"url": f"http://127.0.0.1:{port}/mcp"}
            file.write_text(yaml.safe_dump(profile, sort_keys=False))
    try:
        run = _eval(str(SCENARIOS), "--only", "order-status", "--profiles", str(profiles),
                    "--report", str(tmp_path / "report"))
    finally:
        server.stop(grace_s=10)
    assert run.returncode == 0, run.stdout + run.stderr
    turn = json.loads((tmp_path / "report" / "report.json").read_text())["scenarios"][0][
        "turns"][0]
    assert turn["tools"] == [{"server": "orders", "tool": "get_order_status",
                              "arguments": {"order_id": "A123"}, "status": "ok"}]


def test_time_to_first_audio_counts_from_the_end_of_the_callers_words() -> None:
    from vocero.evals.client import Caller, TurnResult

    typed = TurnResult(index=1, sent_at=100.0)
    assert Caller._ttfa_origin(typed, 100.3) == 100.0
    spoken = TurnResult(index=1, sent_at=100.0, spoken_until=103.0,
                        frames=[{"type": "transcript.final.v1", "at": 102.5, "payload": {}}])
    assert Caller._ttfa_origin(spoken, 103.4) == 103.0, "not from the first word"
    assert Caller._ttfa_origin(spoken, 102.8) == 102.5, "a pause ended the turn: its transcript"
