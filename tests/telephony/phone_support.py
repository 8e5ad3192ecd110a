"""A Vocero app with the phone leg on, the sim runners, a profile of its own (a harbour office's
ledger: names no other test uses) whose tools sit behind a :class:`FakeToolGateway` recording
what reached the server, and a caller known by phone number."""

from __future__ import annotations

import re
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from starlette.testclient import TestClient

from tests.support.carrier import AUTH_TOKEN, PUBLIC_URL, CarrierClient, webhook
from tests.support.db import migrated_copy
from tests.support.fakes import FakeToolGateway
from tests.support.polling import wait_for
from vocero.app.server import create_app
from vocero.app.settings import Settings
from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import ToolCallRequest, ToolResult

OPERATOR = {"authorization": "Bearer op-phone-token"}
PHONE = "+15550100777"
UNKNOWN_PHONE = "+15550100999"
MS_PER_CHAR = 10
LOOKUP = ToolDefinition(
    name="ledger.lookup",
    description="Look up one of the caller's ledger entries.",
    input_schema={"type": "object", "properties": {"entry_id": {"type": "string"}},
                  "required": ["entry_id"]},
)
AMEND = ToolDefinition(
    name="ledger.amend",
    description="Change the state of one of the caller's ledger entries.",
    input_schema={
        "type": "object",
        "properties": {"entry_id": {"type": "string"}, "state": {"type": "string"}},
        "required": ["entry_id", "state"],
    },
)
PROFILE: dict[str, Any] = {
    "id": "harbour-office",
    "version": "1",
    "match": {"tenant": "harbourline"},
    "locale": "en-US",
    "min_interruption_ms": 200,
    "max_lead_ms": 400,
    "word_budget": 60,
    "instructions": "You answer the harbour office's phone.",
    "mcp_servers": {"ledger": {"url": "http://127.0.0.1:9/mcp"}},  # behind the fake gateway
    "tools": [
        {"name": "ledger.lookup", "server": "ledger", "resolves_to": "find_entry",
         "action_class": "read", "required_scopes": ["ledger:read"], "idempotent": True},
        {"name": "ledger.amend", "server": "ledger", "resolves_to": "amend_entry",
         "action_class": "reversible_write", "requires_confirmation": True,
         "required_scopes": ["ledger:write"]},
    ],
}
LONG_REPLY = ("The harbour office opens early every weekday morning. Boats leave from the north "
              "pier beside the old lighthouse. Tickets are sold at the kiosk near the main gate. "
              "The last boat comes back in the evening.")
RULES: list[dict[str, Any]] = [
    {"match": r"^(yes|yeah)\b", "intent": "confirm"},
    {"match": r"^no\b", "intent": "reject"},
    {"match": r"what is entry (?P<e>E\d+)", "tool": "ledger.lookup",
     "arguments": {"entry_id": "{e}"}, "reply": "Entry {e} is {result.state}."},
    {"match": r"amend entry (?P<e>E\d+) to (?P<v>\w+)", "tool": "ledger.amend",
     "arguments": {"entry_id": "{e}", "state": "{v}"}, "reply": "Done."},
    {"match": r"tell me about the harbour", "reply": LONG_REPLY},
    {"match": r".*", "reply": "I can help with the ledger."},
]


def answer(request: ToolCallRequest) -> ToolResult:
    if request.tool == "ledger.lookup":
        return ToolResult(content={"entry_id": request.arguments["entry_id"], "state": "settled"})
    return ToolResult(content={"status": "amended", **request.arguments})


@dataclass
class Phone:
    client: TestClient
    gateway: FakeToolGateway

    def writes(self) -> list[ToolCallRequest]:
        return self.gateway.calls("ledger.amend")

    def get(self, path: str) -> Any:
        response = self.client.get(path, headers=OPERATOR)
        assert response.status_code == 200, response.text
        return response.json()

    def session_of(self, call_sid: str) -> dict[str, Any]:
        """The session record of the call (``GET /v1/sessions``, then ``/{id}``)."""
        def listed() -> dict[str, Any] | None:
            items = self.get("/v1/sessions")["items"]
            return next((s for s in items if s.get("call_sid") == call_sid), None)

        found = wait_for(f"the session of {call_sid}", listed, timeout_s=10)
        session: dict[str, Any] = self.get(f"/v1/sessions/{found['session_id']}")
        return session

    def heard(self, call_sid: str) -> list[str]:
        """The assistant's lines as heard, from the session record."""
        history = self.session_of(call_sid)["history"]
        return [h["text"] for h in history if h["role"] == "assistant" and h["text"]]

    def wait_heard(self, call_sid: str, pattern: str) -> list[str]:
        return wait_for(
            f"an assistant line heard matching {pattern!r}",
            lambda: (lines := self.heard(call_sid))
            and any(re.search(pattern, line) for line in lines) and lines,
            timeout_s=20,
        )

    def audit(self, kind: str) -> list[dict[str, Any]]:
        items = self.get("/v1/audit?limit=5000")["items"]
        return [e for e in items if e["kind"] == kind]

    def answer_call(self, call_sid: str, phone: str = PHONE) -> tuple[str, str]:
        """The webhook for a call from ``phone``: (stream URL, ticket) of its TwiML."""
        response = webhook(self.client, call_params(call_sid, phone))
        assert response.status_code == 200, response.text
        stream = ET.fromstring(response.text).find("./Connect/Stream")
        assert stream is not None, response.text
        parameter = stream.find("./Parameter[@name='ticket']")
        assert parameter is not None
        return stream.attrib["url"], parameter.attrib["value"]

    @contextmanager
    def call(self, call_sid: str = "") -> Iterator[CarrierClient]:
        """A call from the known caller, answered and streaming."""
        call_sid = call_sid or new_call_sid()
        _url, ticket = self.answer_call(call_sid)
        with self.call_with(call_sid, ticket) as carrier:
            yield carrier

    @contextmanager
    def call_with(self, call_sid: str, ticket: str) -> Iterator[CarrierClient]:
        """The media stream of an answered call, started with ``ticket``."""
        with self.client.websocket_connect("/v1/telephony/twilio") as ws:
            carrier = CarrierClient(ws, call_sid)
            carrier.start(ticket)
            yield carrier


def new_call_sid() -> str:
    return "CA" + uuid.uuid4().hex


def call_params(call_sid: str, phone: str) -> dict[str, str]:
    return {"CallSid": call_sid, "AccountSid": "ACtest", "From": phone, "To": "+15550100000",
            "CallStatus": "ringing", "Direction": "inbound"}


@contextmanager
def phone_app(
    tmp_path: Path, stt: list[str], *, telephony: bool = True,
    profile: dict[str, Any] | None = None, settings: dict[str, Any] | None = None,
) -> Iterator[Phone]:
    """``profile``: the profile to run instead of :data:`PROFILE`; ``settings``: more
    settings."""
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "harbour.yaml").write_text(yaml.safe_dump(profile or PROFILE))
    identities = tmp_path / "identities.yaml"
    identities.write_text(yaml.safe_dump({"callers": [{
        "token": f"harbour-{uuid.uuid4().hex}", "subject": f"skipper-{uuid.uuid4().hex[:8]}",
        "tenant": "harbourline", "roles": ["member"], "scopes": ["ledger:read", "ledger:write"],
        "timezone": "UTC", "phone": PHONE,
    }]}))
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump(
        {"stt": stt, "tts": {"ms_per_char": MS_PER_CHAR}, "llm": RULES}
    ))
    config = Settings(
        runners="sim",
        db=migrated_copy(tmp_path / "vocero.db", driver="sqlite+aiosqlite"),
        sim_script=str(script), profiles=str(profiles), identities=str(identities),
        operator_token="op-phone-token", followups_tick_s=0,
        public_url=PUBLIC_URL if telephony else "",
        twilio_auth_token=AUTH_TOKEN if telephony else "",
        **(settings or {}),
    )
    gateway = FakeToolGateway([LOOKUP, AMEND], {"ledger.lookup": answer, "ledger.amend": answer})
    with TestClient(create_app(config, gateway_for=lambda _p, _c: gateway)) as client:
        assert client.portal is not None
        client.portal.call(client.app.state.runtime.ready.wait)  # type: ignore[attr-defined]
        yield Phone(client, gateway)
