"""Which browser origins may open ``/v1/realtime`` (``--allowed-origins``; docs/protocol.md
"Session lifecycle").

A browser always sends ``Origin`` on a WebSocket upgrade and lets any page open a socket to any
host, loopback included; without this check any web page the user visits could drive a local
Vocero with a known caller token. An upgrade whose ``Origin`` is not allowed is refused with
HTTP 403 before it is accepted. Requests without ``Origin`` (servers, command-line clients,
tests) are not browsers and are not affected.

Origins compare as ``scheme://host[:port]``, lowercased, default ports dropped. The default is
the server's own origin: ``http://HOST:PORT`` of ``--host``/``--port`` (for a loopback host,
each loopback name of that port). A server bound to every interface (``0.0.0.0``, ``::``) does
not know the name it is reached by; it then allows an origin that names the request's own
``Host``, and ``--allowed-origins`` should be set.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_WILDCARD = ("0.0.0.0", "::", "")


def normalize(origin: str) -> str | None:
    """``scheme://host[:port]`` in canonical form, or ``None`` when it is not such an origin
    (``null``, a path, credentials, an unknown scheme)."""
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if scheme not in _DEFAULT_PORTS or not host or parts.username or parts.password:
        return None
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    return _origin(scheme, host, port)


def _origin(scheme: str, host: str, port: int | None) -> str:
    shown = f"[{host}]" if ":" in host else host
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{shown}"
    return f"{scheme}://{shown}:{port}"


@dataclass(frozen=True, slots=True)
class OriginPolicy:
    allowed: frozenset[str] = frozenset()
    any_origin: bool = False
    same_host: bool = False
    """Also allow an origin naming the request's ``Host`` (servers bound to every interface)."""

    @classmethod
    def parse(cls, text: str, *, host: str, port: int) -> OriginPolicy:
        """``--allowed-origins``: comma-separated origins, ``*`` for any; empty: the default."""
        entries = [e.strip() for e in text.split(",") if e.strip()]
        if not entries:
            return cls.server_default(host, port)
        if "*" in entries:
            return cls(any_origin=True)
        allowed = {normalize(e) or e.strip().lower() for e in entries}
        return cls(allowed=frozenset(allowed))

    @classmethod
    def server_default(cls, host: str, port: int) -> OriginPolicy:
        """The server's own origin (http and https, every loopback name of a loopback host)."""
        host = host.strip("[]").lower()
        if host in _WILDCARD:
            return cls(same_host=True)
        names = _LOOPBACK if host in _LOOPBACK else (host,)
        return cls(
            allowed=frozenset(_origin(s, n, port) for s in ("http", "https") for n in names)
        )

    def allows(self, origin: str | None, request_host: str = "") -> bool:
        """Whether an upgrade carrying this ``Origin`` header may proceed."""
        if origin is None or self.any_origin:
            return True
        if origin.strip().lower() in self.allowed:  # e.g. ``null``, when listed explicitly
            return True
        canonical = normalize(origin)
        if canonical is None:
            return False
        if canonical in self.allowed:
            return True
        if self.same_host and request_host:
            scheme = canonical.split("://", 1)[0]
            return canonical == normalize(f"{scheme}://{request_host}")
        return False
