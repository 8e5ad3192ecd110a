"""A loopback recording proxy for a streamable-HTTP MCP server (docs/eval.md).

Every request is forwarded to the server as it came (method, path, query, headers, body) and
every response streamed back as it comes (JSON or ``text/event-stream``); the JSON-RPC messages
on the way are parsed aside, and each ``tools/call`` with its response is recorded like the
stdio tap does (:class:`vocero.evals.tap.Recorder`)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import httpx

from vocero.evals.tap import Recorder

HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
              "trailers", "transfer-encoding", "upgrade", "host", "content-length"}


class RecordingProxy:
    """Listens on a free loopback port; :attr:`url` replaces the server's ``url``."""

    def __init__(self, upstream: str, record: str, server: str) -> None:
        parts = urlsplit(upstream)
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.recorder = Recorder(record, server)
        self.client = httpx.Client(timeout=httpx.Timeout(30.0, read=None))
        handler = _handler(self)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{port}{parts.path or '/'}" + (
            f"?{parts.query}" if parts.query else "")
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def start(self) -> RecordingProxy:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.client.close()
        self.recorder.close()

    def requests(self, body: bytes) -> None:
        for message in _messages(body):
            self.recorder.request(json.dumps(message).encode())

    def responses(self, body: bytes) -> None:
        for message in _messages(body):
            self.recorder.response(json.dumps(message).encode())


def _messages(body: bytes) -> list[dict[str, Any]]:
    try:
        data = json.loads(body)
    except ValueError:
        return []
    items = data if isinstance(data, list) else [data]
    return [m for m in items if isinstance(m, dict)]


def _handler(proxy: RecordingProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # close-delimited bodies: streams pass through as they come

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if body:
                proxy.requests(body)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            request = proxy.client.build_request(self.command, proxy.origin + self.path,
                                                 headers=headers, content=body)
            try:
                response = proxy.client.send(request, stream=True)
            except httpx.HTTPError as exc:
                self.send_error(502, f"upstream: {exc}")
                return
            try:
                self.send_response(response.status_code)
                for key, value in response.headers.items():
                    if key.lower() not in HOP_BY_HOP and key.lower() != "content-encoding":
                        self.send_header(key, value)
                self.end_headers()
                streaming = "text/event-stream" in response.headers.get("content-type", "")
                pending = b""
                collected = bytearray()
                for chunk in response.iter_bytes():
                    self.wfile.write(chunk)
                    self.wfile.flush()
                    if streaming:
                        pending += chunk
                        *lines, pending = pending.split(b"\n")
                        for line in lines:
                            if line.startswith(b"data:"):
                                proxy.responses(line[5:].strip())
                    else:
                        collected += chunk
                if collected:
                    proxy.responses(bytes(collected))
            except (BrokenPipeError, ConnectionResetError):
                pass
            finally:
                response.close()

        do_GET = do_POST = do_DELETE = _forward

    return Handler
