"""The operator console at ``/operator`` in headless Chromium, against a real server on the sim
runners after a real demo call (a read, a confirmed reschedule, a refused account closure, a
call-back held for approval): the pages render without console errors, the session's timeline
and actions show what happened, the audit chain is recomputed in the page (and a tampered event
is caught), and the "needs you" actions change the server's state.

Screenshots are written to the test's tmp dir (``console-*.png``); docs/screenshots/ holds
copies of three of them.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import Route

from tests.console.conftest import (
    CALL,
    REPO,
    Call,
    Console,
    ConsoleServer,
    demo_call,
    record_consents,
    until,
)
from tests.support.voices import make_wav
from vocero.store.hashchain import canonical_json

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def call(console_server: ConsoleServer) -> Call:
    made = demo_call(console_server.url)
    _hold_the_call_back(console_server)
    _a_voice_with_one_approval(console_server)
    _a_server_awaiting_authorization(console_server)
    until(lambda: any(t["status"] == "changed" for t in console_server.get("/v1/tools")["items"]),
          "the orders tool to change")
    return made


def _hold_the_call_back(server: ConsoleServer) -> None:
    """The queue's pass when the call-back is due: the profile says ``approve``, so it is held."""
    due = datetime.now(ZoneInfo("Europe/Madrid")).replace(hour=9, minute=1) + timedelta(days=1)
    workdir = Path(server.record).parent
    done = subprocess.run(
        [sys.executable, "-m", "vocero", "followups", "tick", "--db",
         f"sqlite+aiosqlite:///{workdir / 'v.db'}", "--now", due.isoformat(),
         "--profiles", str(workdir / "profiles"), "--settle-s", "5"],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    held = server.get("/v1/followups?status=awaiting_approval")["items"]
    assert len(held) == 1, done.stdout


AUTHORIZATION_URL = "https://login.example.com/authorize?client_id=vocero-gateway&state=s1"


def _a_server_awaiting_authorization(server: ConsoleServer) -> None:
    """Two nodes wait for an operator to authorize ``crm``: the console shows one."""
    record_consents(server, ("crm", "node_a", f"{AUTHORIZATION_URL}0", 0),
                    ("crm", "node_b", AUTHORIZATION_URL, 1))
    assert [c["node_id"] for c in server.get("/v1/mcp/authorizations")["items"]] == [
        "node_a", "node_b"]


def _a_voice_with_one_approval(server: ConsoleServer) -> None:
    owner = "owner-token"
    body = {"voice_id": "corp-en", "tenant": "acme", "owner": "Brand team",
            "purpose": "Agent voice", "languages": ["en"], "usage_until": "2099-12-31",
            "consent_ref": "consent-1"}
    assert server.post("/v1/voices", body, token=owner).status_code == 201
    version = {"ref_audio": base64.b64encode(make_wav(1.5)).decode(), "ref_text": "Hello there."}
    assert server.post("/v1/voices/corp-en/versions", version, token=owner).status_code == 201
    approved = server.post("/v1/voices/corp-en/versions/1/approvals", token=owner)
    assert approved.json()["status"] == "pending"


def test_the_session_list_and_one_sessions_timeline(console: Console, call: Call) -> None:
    console.sign_in()
    assert call.session_id in console.texts("#sessions tbody tr td:first-child")
    console.shot("sessions")
    console.open_session(call.session_id)
    page = console.page
    assert page.inner_text("#session-id") == call.session_id
    effective = dict(zip(console.texts("#effective dt"), console.texts("#effective dd"),
                         strict=True))
    assert (effective["turn_mode"], effective["locale"], effective["profile_id"]) == (
        "push_to_talk", "en-US", "demo")

    said = console.texts("#timeline li.user .said")
    assert said == CALL, "every caller turn, as recognised"
    heard = console.texts("#timeline li.assistant .said")
    assert heard == [p["heard_text"] for p in call.of("response.completed.v1")]
    units = console.server.get(f"/v1/units?session_id={call.session_id}")["items"]
    shown = page.locator("#timeline .units li")
    assert shown.count() == len(units) > 0
    assert page.locator("#timeline .disposition[data-d=admitted]").count() == sum(
        u["disposition"] == "admitted" for u in units)
    assert any("evidence tool" in t for t in console.texts("#timeline .units li"))

    proposals = console.texts("#proposals > li")
    assert any(t.startswith("appointments.reschedule") for t in proposals)
    assert any("confirm" in t and "used" in t for t in proposals), proposals
    listed = console.server.get(f"/v1/proposals?session_id={call.session_id}")["items"]
    asked = {(p["tool"], r["revision"]): r["asked"] for p in listed for r in p["revisions"]}
    assert asked[("appointments.reschedule", 1)] is True, "its read-back was asked"
    operations = console.server.get(f"/v1/operations?session_id={call.session_id}")["items"]
    rows = page.locator("#operations tbody tr")
    assert rows.count() == len(operations)
    assert "committed" in console.texts("#operations tbody td:nth-child(4)")
    console.shot("timeline")


def test_the_audit_chain_is_recomputed_in_the_page(console: Console, call: Call) -> None:
    console.sign_in()
    console.open_session(call.session_id)
    page = console.page
    page.wait_for_selector("#chain-status[data-ok=true]")
    audit = console.server.get(f"/v1/audit?session_id={call.session_id}")["items"]
    verdicts = console.texts("#audit td.verdict")
    assert verdicts == ["recomputed"] * len(audit)
    assert "Recomputed here with WebCrypto" in page.inner_text("#chain-detail")
    page.locator("#chain-status").scroll_into_view_if_needed()
    console.shot("audit")


def test_an_operator_of_one_tenant_verifies_each_event_and_the_server_the_links(
    console: Console, call: Call
) -> None:
    """``GET /v1/audit`` leaves out other tenants' events (and those of no session) for an
    operator of some tenants (``scoped``): the page recomputes each event from its own
    ``prev_hash`` and says the links are the server's check, instead of calling a hidden gap a
    break (docs/operators.md "Tenancy")."""
    console.sign_in("acme-sec-token")
    console.open_session(call.session_id)
    page = console.page
    page.wait_for_selector("#chain-status[data-ok=true]")
    assert page.inner_text("#chain-status") == (
        "events verified in this page; links verified by the server")
    audit = console.server.get(f"/v1/audit?session_id={call.session_id}")["items"]
    assert console.texts("#audit td.verdict") == ["recomputed"] * len(audit)
    # tools and MCP authorizations serve every tenant: refused (403), shown as none
    console.problems[:] = [p for p in console.problems if "403" not in p]


def test_a_tampered_event_is_caught_by_the_page(console: Console, call: Call) -> None:
    """The server's answer is altered on its way to the page (one event's data): the page's own
    recomputation, not the server's verdict, reports the break at that event."""
    audit = console.server.get(f"/v1/audit?session_id={call.session_id}")["items"]
    target = audit[len(audit) // 2]["seq"]

    def tamper(route: Route) -> None:
        response = route.fetch()
        body = json.loads(response.text())
        for item in body["items"]:
            if item["seq"] == target:
                item["data"] = {**item["data"], "injected": True}
        route.fulfill(response=response, body=json.dumps(body))

    console.page.route("**/v1/audit?*", tamper)
    console.sign_in()
    console.open_session(call.session_id)
    console.page.wait_for_selector("#chain-status[data-ok=false]")
    assert console.page.inner_text("#chain-status") == f"chain broken at seq {target}"
    row = console.page.locator(f"#audit tr[data-seq='{target}'] td.verdict")
    assert row.inner_text() == "broken"


def test_the_page_writes_canonical_json_as_python_does(console: Console, call: Call) -> None:
    """Numbers, escapes and key order: the hash input must be byte-identical to Vocero's."""
    cases = [
        {"b": 1, "a": [1.0, 0.5, 1e16, 1e-07, -0.0, 123456789.125, 2**60]},
        {"é": "line\nbreak \"quoted\" \\ \u0001 \u2028 ☃ 𝄞", "Z": None, "a": True},
        {"nested": {"z": {"y": [], "x": {}}}, "": 0},
    ]
    console.sign_in()
    texts = [json.dumps(case) for case in cases]
    written = console.page.evaluate(
        """async (texts) => {
            const chain = await import('/operator/chain.js');
            return texts.map((t) => chain.canonical(chain.parseLossless(t)));
        }""", texts)
    assert written == [canonical_json(case) for case in cases]


def test_needs_you_actions_change_the_server(console: Console, call: Call) -> None:
    server = console.server
    console.sign_in()
    console.tab("needs")
    page = console.page
    held = server.get("/v1/followups?status=awaiting_approval")["items"]
    changed = [t for t in server.get("/v1/tools")["items"] if t["status"] == "changed"]
    assert page.locator("#needs-followups li[data-followup]").count() == len(held) == 1
    assert page.locator("#needs-tools li[data-tool]").count() == len(changed) == 1
    assert page.locator("#needs-voices li[data-voice='corp-en/1']").count() == 1
    authorization = page.locator("#needs-authorizations li[data-authorization='crm'] a")
    assert authorization.count() == 1  # one per server: the newest of the nodes' consents
    assert authorization.get_attribute("href") == AUTHORIZATION_URL
    assert authorization.get_attribute("rel") == "noopener noreferrer"
    assert page.inner_text("#needs-count") == "4"
    console.shot("needs")

    page.fill(f"li[data-followup='{held[0]['id']}'] input", "caller asked twice")
    page.click(f"li[data-followup='{held[0]['id']}'] button")
    page.wait_for_selector("#needs-followups li.empty")
    approved = [f for f in server.get(f"/v1/followups?session_id={call.session_id}")["items"]
                if f["id"] == held[0]["id"]]
    assert approved[0]["status"] != "awaiting_approval"
    assert approved[0]["approved_by"] == "admin"

    tool = f"{changed[0]['server']}/{changed[0]['tool']}"
    page.click(f"li[data-tool='{tool}'] button")
    page.wait_for_selector("#needs-tools li.empty")
    pins = {f"{t['server']}/{t['tool']}": t for t in server.get("/v1/tools")["items"]}
    assert pins[tool]["status"] == "approved"
    assert pins[tool]["definition_hash"] == changed[0]["observed_hash"]

    page.click("li[data-voice='corp-en/1'] button")
    page.wait_for_selector("#needs-voices li.empty")
    voice = server.get("/v1/voices/corp-en")
    assert voice["versions"][0]["status"] == "approved"
    assert {a["operator"] for a in voice["versions"][0]["approvals"]} == {"olga", "admin"}
    assert page.inner_text("#needs-count") == "1"  # the authorization server's callback ends it


def test_denials_latency_and_retention(console: Console, call: Call) -> None:
    console.sign_in()
    console.tab("denials")
    page = console.page
    reasons = console.texts("#denials tbody td:first-child")
    denials = console.server.get("/v1/denials")["items"]
    assert reasons == [d["reason_code"] for d in denials]
    assert "prohibited" in reasons
    assert page.locator("#denials-chart canvas").count() == 1, "drawn by uPlot"

    console.tab("latency")
    page.wait_for_selector("figure[data-stage=ttfs_ms] canvas")
    latency = {s["stage"]: s for s in console.server.get("/v1/latency")["items"]}
    assert latency["ttfs_ms"]["count"] >= len(CALL)
    caption = page.inner_text("figure[data-stage=ttfs_ms] .figures")
    assert f"{latency['ttfs_ms']['count']} observations" in caption
    assert f"p95 {latency['ttfs_ms']['p95']:g}" in caption
    drawn = page.locator("#latency figure canvas").count()
    assert drawn == sum(1 for s in latency.values() if s["count"])
    assert console.texts("#tool-latency tbody td:first-child")
    console.shot("latency")

    console.tab("retention")
    classes = console.texts("#retention tbody td:first-child")
    assert classes == ["raw_audio", "voice_references", "transcripts", "prompts_context",
                       "model_responses", "tool_io", "telemetry", "audit"]
    assert console.texts("#retention tbody td:nth-child(2)")[0] == "not stored"


def test_a_refused_token_shows_nothing(console: Console, call: Call) -> None:
    page = console.page
    page.goto(console.server.url + "/operator")
    page.fill("#token", "not-a-token")
    page.click("#login button[type=submit]")
    page.wait_for_function("() => document.querySelector('#whoami').textContent.length > 0")
    assert page.inner_text("#whoami") == "token refused"
    assert page.locator("#tabs").is_hidden()
    console.problems[:] = [p for p in console.problems if "401" not in p]


def test_a_role_without_reading_rights_is_refused(console: Console, call: Call) -> None:
    page = console.page
    page.goto(console.server.url + "/operator")
    page.fill("#token", "viewer-token")
    page.click("#login button[type=submit]")
    page.wait_for_function("() => document.querySelector('#whoami').textContent.length > 0")
    assert page.inner_text("#whoami") == "refused (forbidden)"
    console.problems[:] = [p for p in console.problems if "403" not in p]
