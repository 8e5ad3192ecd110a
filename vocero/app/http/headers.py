"""Security headers on every HTTP response: the browser client (``/``), the operator console
(``/operator/``), their scripts and styles, and the APIs (docs/security.md, "Browser pages").

The pages load only their own files: no inline script, style or handler, nothing from another
origin. The policy says so, so that text a page ever put in its document by mistake could not
run; no other page may frame them (clickjacking the console's "Approve"); a response is only
what its type says; no page's address leaves in a ``Referer``.
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",  # the pages' modules and the audio worklets, nothing inline
        "style-src 'self'",
        "img-src 'self' data:",  # the empty favicon is a data: URL
        "connect-src 'self'",  # the operator API and the realtime WebSocket
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-frame-options": "DENY",  # frame-ancestors for browsers that predate it
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


class SecurityHeaders:
    """ASGI middleware: :data:`SECURITY_HEADERS` on every HTTP response that lacks them."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, sending)
