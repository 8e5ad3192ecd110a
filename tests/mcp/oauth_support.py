"""The OAuth fixtures of the tests: a local authorization server
(``fixtures/mcp_servers/oauth_server.py``) and the bookings server as its resource server."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from gateway_support import HttpServer

KEY = secrets.token_bytes(32)
ENV = {"BOOKINGS_CLIENT_SECRET": "s3cret"}


@dataclass
class Servers:
    issuer: str
    bookings: HttpServer
    folder: Path

    async def admin(self, path: str, body: dict[str, Any] | None = None) -> Any:
        async with httpx2.AsyncClient() as http:
            if body is None:
                return (await http.get(f"{self.issuer}{path}")).json()
            return (await http.post(f"{self.issuer}{path}", json=body)).json()

    async def grants(self) -> list[str]:
        return [g["grant"] for g in await self.admin("/admin/grants")]


@contextmanager
def oauth_servers(folder: Path, *, expires_in: str = "3600") -> Iterator[Servers]:
    authority = HttpServer("oauth_server.py", {"VOCERO_AS_EXPIRES_IN": expires_in})
    authority.start()
    try:
        authority.wait_ready()
        issuer = f"http://127.0.0.1:{authority.port}"
        env = {
            "VOCERO_MCP_RECORD": str(folder / "bookings.jsonl"),
            "VOCERO_MCP_STATE": str(folder / "bookings.json"),
            "VOCERO_MCP_HEADERS": str(folder / "headers.jsonl"),
        }
        resource = HttpServer("bookings_server.py", env, ["--auth-server", issuer])
        resource.start()
        try:
            resource.wait_ready()
            yield Servers(issuer, resource, folder)
        finally:
            resource.stop()
    finally:
        authority.stop()
