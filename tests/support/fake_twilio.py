"""Twilio's REST API as a handoff reaches it: ``POST /2010-04-01/Accounts/{AccountSid}/Calls/
{CallSid}.json`` (update a live call with new TwiML), and as a call-back reaches it: ``POST
/2010-04-01/Accounts/{AccountSid}/Calls.json`` (create a call: :class:`CallCreate`, answered 201
with a new ``sid`` unless ``create_status`` says otherwise), on ``127.0.0.1`` (uvicorn in a
thread).

Every request is kept (:class:`CallUpdate`: the path's ids, the form, the basic-auth pair) with
what ``witness()`` returned the moment it arrived (a test passes one that reads what the caller
had heard by then). ``status`` makes it refuse (a carrier failure).
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.support.polling import wait_for
from tests.support.servers import free_port


@dataclass
class CallUpdate:
    account_sid: str
    call_sid: str
    form: dict[str, str]
    auth: tuple[str, str]
    witnessed: Any = None


@dataclass
class CallCreate:
    account_sid: str
    form: dict[str, str]
    auth: tuple[str, str]
    sid: str = ""


@dataclass
class FakeTwilioApi:
    status: int = 200
    """What it answers; anything from 300 up is a refusal."""
    witness: Callable[[], Any] | None = None
    updates: list[CallUpdate] = field(default_factory=list)
    create_status: int = 201
    """What a create-call request is answered (201 with a ``sid``; anything else refuses)."""
    creates: list[CallCreate] = field(default_factory=list)
    create_latency_s: float = 0.0
    """How long the answer to a create-call takes once the call exists (a slow carrier: the
    caller's wait runs out and the answer is lost)."""
    port: int = field(default_factory=free_port)
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FakeTwilioApi:
        app = Starlette(routes=[
            Route("/2010-04-01/Accounts/{account}/Calls.json", self._create, methods=["POST"]),
            Route("/2010-04-01/Accounts/{account}/Calls/{call}.json", self._update,
                  methods=["POST"])])
        server = uvicorn.Server(uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off",
            log_config=None, timeout_graceful_shutdown=2,
        ))
        self._server = server
        self._thread = threading.Thread(target=server.run, daemon=True, name="fake-twilio")
        self._thread.start()
        wait_for("fake Twilio API", lambda: server.started, timeout_s=10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)

    def received(self) -> list[CallUpdate]:
        with self._lock:
            return list(self.updates)

    def created(self) -> list[CallCreate]:
        with self._lock:
            return list(self.creates)

    async def _create(self, request: Request) -> Response:
        form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
        create = CallCreate(account_sid=request.path_params["account"], form=form,
                            auth=_basic(request))
        with self._lock:
            self.creates.append(create)
            create.sid = f"CA{len(self.creates):032d}"
        if self.create_latency_s:
            await anyio.sleep(self.create_latency_s)  # a slow carrier, not a synchronisation
        if self.create_status != 201:
            return JSONResponse({"code": 21211, "message": "refused",
                                 "status": self.create_status}, status_code=self.create_status)
        return JSONResponse({"sid": create.sid, "account_sid": create.account_sid,
                             "to": form.get("To", ""), "from": form.get("From", ""),
                             "status": "queued"}, status_code=201)

    async def _update(self, request: Request) -> Response:
        form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
        user, _, password = base64.b64decode(
            request.headers.get("authorization", "Basic ").removeprefix("Basic ") or b""
        ).decode().partition(":")
        update = CallUpdate(
            account_sid=request.path_params["account"], call_sid=request.path_params["call"],
            form=form, auth=(user, password),
            witnessed=self.witness() if self.witness is not None else None,
        )
        with self._lock:
            self.updates.append(update)
        if self.status >= 300:
            return JSONResponse({"code": 20404, "message": "refused", "status": self.status},
                                status_code=self.status)
        return JSONResponse({"sid": update.call_sid, "account_sid": update.account_sid,
                             "status": "in-progress"})


def _basic(request: Request) -> tuple[str, str]:
    user, _, password = base64.b64decode(
        request.headers.get("authorization", "Basic ").removeprefix("Basic ") or b""
    ).decode().partition(":")
    return user, password
