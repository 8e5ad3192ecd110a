"""Issue 26, finding 9: the pages ``/`` and ``/operator/`` sent no Content-Security-Policy, no
``frame-ancestors``/X-Frame-Options, no ``nosniff`` and no Referrer-Policy, so another site could
frame the console and have an operator click "Approve". Here, in headless Chromium against a
real server: every response carries the headers; both pages do their work under the policy
with nothing refused and no console error; the policy is enforced (an inline script does not
run); the console cannot be framed; and the console links only to http(s) pages."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from tests.console.conftest import Console, ConsoleServer, record_consents, watched_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]

HTTPS_PAGE = "https://login.example.com/authorize?client_id=vocero-gateway&state=s9"
SCRIPT_PAGE = "javascript:alert(document.domain)"


@pytest.fixture
def client_page(
    browser: Browser, console_server: ConsoleServer, tmp_path: Path
) -> Iterator[Console]:
    """The browser client at ``/``, watched like a console page."""
    with watched_page(browser, console_server, tmp_path, width=900, height=700,
                      what="the browser client") as opened:
        yield opened


@pytest.mark.parametrize(
    "path", ["/", "/operator/", "/static/app.js", "/operator/console.js", "/v1/sessions",
             "/oauth/mcp/callback"],
)
def test_every_response_carries_the_security_headers(
    console_server: ConsoleServer, path: str
) -> None:
    headers = console_server.http.get(path).headers
    policy = [d.strip() for d in headers["content-security-policy"].split(";")]
    assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
    assert "script-src 'self'" in policy and "style-src 'self'" in policy
    assert "unsafe" not in headers["content-security-policy"]
    assert headers["x-frame-options"] == "DENY"
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"


def test_the_browser_client_talks_under_the_policy(client_page: Console) -> None:
    page = client_page.page
    page.goto(client_page.server.url + "/")
    page.fill("#token", "demo-token")
    page.click("#connect")
    # (predicates as functions: the policy refuses the eval a bare expression would need)
    page.wait_for_function("() => window.vocero.events.filter("
                           "e => e.type === 'session.configuration_applied.v1').length >= 2")
    page.fill("#text", "hello there")
    page.click("#send")
    page.wait_for_function(
        "() => window.vocero.events.some(e => e.type === 'response.completed.v1')")
    assert page.locator("#conversation li").count() >= 2
    assert client_page.violations() == []
    assert client_page.problems == []
    # the policy is in force: a script written into the page does not run
    ran = page.evaluate("""() => {
        const inline = document.createElement("script");
        inline.textContent = "window.__inline = 1";
        document.body.append(inline);
        return window.__inline ?? null;
    }""")
    assert ran is None
    assert client_page.violations() == ["script-src-elem inline"]
    refused = [p for p in client_page.problems if "Content Security Policy" in p]
    assert len(refused) == len(client_page.problems) == 1
    client_page.problems.clear()


def test_the_console_works_under_the_policy_and_links_only_http_pages(
    console: Console, console_server: ConsoleServer
) -> None:
    record_consents(console_server, ("crm", "node_a", HTTPS_PAGE, 0),
                    ("evil", "node_a", SCRIPT_PAGE, 0))
    console.sign_in()
    for tab in ("needs", "denials", "latency", "retention", "sessions"):
        console.tab(tab)
    console.tab("needs")
    page = console.page
    crm = page.locator("#needs-authorizations li[data-authorization='crm'] a")
    assert crm.get_attribute("href") == HTTPS_PAGE
    evil = page.locator("#needs-authorizations li[data-authorization='evil']")
    assert evil.locator("a").count() == 0
    assert "not an http(s) address" in evil.inner_text()
    links = page.eval_on_selector_all("a[href]", "anchors => anchors.map(a => a.protocol)")
    assert links and set(links) <= {"http:", "https:"}
    assert console.violations() == []


def test_no_page_can_frame_the_console(console: Console, console_server: ConsoleServer) -> None:
    page = console.page
    page.set_content(f'<iframe src="{console_server.url}/operator/"></iframe>')
    frame = page.frame_locator("iframe")
    page.wait_for_function("() => document.querySelector('iframe').contentWindow !== null")
    assert frame.locator("#login").count() == 0, "the console rendered inside a frame"
    console.problems[:] = [p for p in console.problems if "frame-ancestors" not in p]
