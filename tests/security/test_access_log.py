"""Issue 26, finding 6: uvicorn's access line logged ``/oauth/mcp/callback?state=…&code=…`` in
both formats, although the callback promises never to log a code or a state. A real
``vocero serve`` is asked for the callback (and for another path with a credential in its
query); its log, in each format, keeps the path and the status but not the query's secrets."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.security.support import Server

pytestmark = pytest.mark.process

STATE, CODE = "st8-4f1d9c2a7b", "c0de-9a8b7c6d5e"
TOKEN = "at-77e1f0c3b2a9"


@pytest.mark.parametrize("fmt", ["console", "json"])
def test_the_access_log_redacts_the_callback_query_and_credentials(
    fmt: str, tmp_path: Path
) -> None:
    server = Server(tmp_path, tmp_path / "vocero.db", log_format=fmt)
    try:
        server.wait_listening()
        with httpx.Client(base_url=server.url, timeout=30) as http:
            callback = http.get("/oauth/mcp/callback", params={"state": STATE, "code": CODE})
            health = http.get("/healthz", params={"access_token": TOKEN, "verbose": "1"})
    finally:
        server.stop()
    assert (callback.status_code, health.status_code) == (400, 200)
    log = server.log.read_text()
    assert [s[:6] for s in (STATE, CODE, TOKEN) if s in log] == []
    access = [line for line in log.splitlines() if '"GET /' in line]
    assert len(access) == 2, log[-2000:]
    assert "/oauth/mcp/callback?[redacted]" in access[0] and " 400" in access[0]
    assert "/healthz?access_token=[redacted]&verbose=1" in access[1]
