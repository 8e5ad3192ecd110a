"""A recording tap for a stdio MCP server (docs/eval.md, "What reaches the MCP servers").

``python -m vocero.evals.tap --record FILE [--server NAME] -- command args...`` runs the server,
relays every byte between its own stdin/stdout and the server's unchanged, and appends one JSON
line to ``FILE`` for each ``tools/call`` it relays: the tool, its arguments, its ``_meta``, the
response and the wall-clock times of both.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO, Any

CHUNK = 65536


class Recorder:
    """Parses newline-delimited JSON-RPC in both directions and writes each tools/call."""

    def __init__(self, file: str, server: str) -> None:
        self.file = file
        self.server = server
        self.lock = threading.Lock()
        self.pending: dict[str, dict[str, Any]] = {}

    def request(self, line: bytes) -> None:
        message = _parse(line)
        if message is None or message.get("method") != "tools/call" or "id" not in message:
            return
        params = message.get("params") or {}
        with self.lock:
            self.pending[json.dumps(message["id"])] = {
                "server": self.server,
                "tool": params.get("name", ""),
                "arguments": params.get("arguments") or {},
                "meta": params.get("_meta") or {},
                "at": time.time(),
            }

    def response(self, line: bytes) -> None:
        message = _parse(line)
        if message is None or "method" in message or "id" not in message:
            return
        with self.lock:
            call = self.pending.pop(json.dumps(message["id"]), None)
        if call is None:
            return
        result = message.get("result")
        error = message.get("error")
        is_error = error is not None or bool(isinstance(result, dict) and result.get("isError"))
        self.write({**call, "answered_at": time.time(), "result": result, "error": error,
                    "status": "error" if is_error else "ok"})

    def close(self) -> None:
        with self.lock:
            unanswered, self.pending = list(self.pending.values()), {}
        for call in unanswered:
            self.write({**call, "answered_at": None, "result": None, "error": None,
                        "status": "unanswered"})

    def write(self, record: dict[str, Any]) -> None:
        with self.lock, open(self.file, "a", encoding="utf-8") as out:
            out.write(json.dumps(record, sort_keys=True) + "\n")


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def relay(source: IO[bytes], sink: IO[bytes], on_line: Callable[[bytes], None]) -> None:
    """Copy bytes as they come (never waiting for a newline), parsing complete lines aside.

    A line is parsed before its last bytes are passed on: the server cannot answer a request
    it has not read whole, so the request is recorded before any answer to it can come back
    (relayed first, a busy machine let the answer overtake it and the call went unrecorded)."""
    buffer = b""
    fd = source.fileno()
    while True:
        chunk = os.read(fd, CHUNK)
        if not chunk:
            break
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line.strip():
                on_line(line)
        sink.write(chunk)
        sink.flush()
    if buffer.strip():
        on_line(buffer)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vocero.evals.tap")
    parser.add_argument("--record", required=True, help="JSONL file the tools/call records go to")
    parser.add_argument("--server", default="", help="the profile's name of the server")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("a command to run is required after --")
    recorder = Recorder(args.record, args.server)
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    child_in, child_out = child.stdin, child.stdout

    def upstream() -> None:
        try:
            relay(sys.stdin.buffer, child_in, recorder.request)
        except (BrokenPipeError, OSError):
            pass
        finally:
            with contextlib.suppress(OSError):
                child_in.close()

    threading.Thread(target=upstream, daemon=True).start()
    try:
        relay(child_out, sys.stdout.buffer, recorder.response)
    except (BrokenPipeError, OSError):
        child.kill()
    code = child.wait()
    recorder.close()
    return code


if __name__ == "__main__":
    raise SystemExit(main())
