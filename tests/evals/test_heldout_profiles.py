"""The held-out profiles of issue 42 (fixtures/profiles-heldout/): each profile loads, its MCP
server lists every tool the profile names and keeps a write idempotent by operation id, and
each suite loads with callers of the held-out identities file."""

from __future__ import annotations

import json
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from vocero.evals.format import load_files
from vocero.identity.profiles import load_profiles

FIXTURES = Path(__file__).parents[2] / "fixtures"
HELDOUT = FIXTURES / "profiles-heldout"

# name -> (server key in the profile, tenant, scopes, a write and its arguments)
CASES: dict[str, tuple[str, str, list[str], str, dict[str, Any]]] = {
    "maple": ("maple", "maple", ["pharmacy:read", "pharmacy:refill"],
              "request_refill", {"script_no": "P-40113", "store": "Riverside"}),
    "northwind": ("grid", "northwind", ["account:read", "readings:write"],
                  "submit_reading", {"account": "40021877", "meter": "gas", "value": 3510}),
    "sunway": ("rentals", "sunway", ["rentals:read", "rentals:write"],
               "add_extra", {"reservation": "SW-5521", "item": "child seat"}),
    "kestrel": ("kestrel", "kestrel", ["jobs:read", "bookings:write"],
                "reserve_bay", {"reg": "KE19 ABC", "service": "full",
                                "drop_off": "2027-01-12T08:30:00+00:00"}),
    "larkspur": ("larkspur", "larkspur", ["stays:read", "stays:write"],
                 "add_to_stay", {"confirmation": "LK30422", "item": "breakfast"}),
    "riverside": ("centre", "riverside", ["membership:read", "membership:freeze"],
                  "freeze_membership", {"member_no": "RL204518", "from_date": "2027-02-01",
                                        "weeks": 6}),
    "quarryhill": ("library", "quarryhill", ["loans:read", "loans:renew"],
                   "renew_item", {"barcode": "QH40217"}),
    "wattle": ("depot", "wattle", ["parcels:read", "parcels:write"],
               "hold_at_depot", {"consignment": "WP310447", "days": 5}),
    "gannet": ("gannet", "gannet", ["bookings:read", "bookings:write"],
               "set_passengers", {"booking_ref": "GF41733", "passengers": 3}),
    "beacon": ("beacon", "beacon", ["lessons:read", "lessons:book"],
               "book_lesson", {"learner_no": "BD20417", "instructor": "Ciara",
                               "start": "2027-01-14T14:00:00+00:00", "length": 90,
                               "pickup": "Finglas Village Library"}),
    "tamarind": ("council", "tamarind", ["collections:read", "bins:write"],
                 "order_bin", {"property": "TP208119", "bin": "recycling",
                               "reason": "the lid is cracked"}),
    "cedarline": ("dispatch", "cedarline", ["jobs:read", "visits:book"],
                  "schedule_technician", {"account": "CL310001", "trade": "plumbing",
                                          "day": "2030-01-15", "window": "morning",
                                          "issue": "a leak under the kitchen sink"}),
    "juniper": ("boxoffice", "juniper", ["shows:read", "bookings:write"],
                "reserve_tickets", {"show": "A Christmas Carol",
                                    "performance": "Saturday matinee", "tickets": 2,
                                    "area": "circle", "name": "Rosie Whitworth"}),
}


def _session(server: Path, tenant: str, scopes: list[str], tool: str, arguments: dict[str, Any],
             state: Path) -> dict[int, Any]:
    """Initialize, list the tools and call ``tool`` twice with one operation id, one request
    at a time (each answer read before the next request is sent)."""
    meta = {"io.vocero/operation_id": "op-heldout-1",
            "io.vocero/principal": {"subject_ref": "s", "tenant_id": tenant, "scopes": scopes},
            "io.vocero/proposal": {"proposal_id": "p1", "revision": 1}}
    call = {"name": tool, "arguments": arguments, "_meta": meta}
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": call},
    ]
    answers: dict[int, Any] = {}
    with subprocess.Popen([sys.executable, str(server)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True,
                          env={"VOCERO_MCP_STATE": str(state), "PATH": "/usr/bin:/bin"}) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            for request in requests:
                proc.stdin.write(json.dumps(request) + "\n")
                proc.stdin.flush()
                while "id" in request and request["id"] not in answers:
                    ready, _, _ = select.select([proc.stdout], [], [], 60)
                    assert ready, f"{server.name} did not answer {request['method']}"
                    line = proc.stdout.readline()
                    assert line, f"{server.name} closed its output"
                    answer = json.loads(line)
                    if "id" in answer:
                        answers[answer["id"]] = answer.get("result", answer.get("error"))
        finally:
            proc.stdin.close()
            proc.terminate()
    return answers


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_profile_loads_and_its_server_lists_its_tools_and_writes_once(
        name: str, tmp_path: Path) -> None:
    key, tenant, scopes, tool, arguments = CASES[name]
    profile = next(iter(load_profiles(HELDOUT / name)))
    spec = profile.mcp_servers[key]
    answers = _session(Path(spec.args[0]), tenant, scopes, tool, arguments, tmp_path / "s.json")

    listed = {t["name"] for t in answers[2]["tools"]}
    named = {t.resolves_to for t in profile.tools if t.server == key}
    named |= {t.lookup_tool for t in profile.tools if t.server == key and t.lookup_tool}
    assert named <= listed, f"{name}: the profile names tools its server lacks"
    first, again = answers[3], answers[4]
    assert not first.get("isError"), first
    assert first["structuredContent"] == again["structuredContent"]
    receipts = json.loads((tmp_path / "s.json").read_text())["receipts"]
    assert list(receipts) == ["op-heldout-1"]


def test_every_held_out_suite_loads_with_its_own_callers() -> None:
    callers = yaml.safe_load((HELDOUT / "identities.yaml").read_text())["callers"]
    tokens = {c["token"] for c in callers}
    for name in CASES:
        scenarios = load_files([str(FIXTURES / f"eval-{name}")])
        assert len(scenarios) >= 15, name
        assert {s.caller for s in scenarios} == {f"{name}-token"} <= tokens
