"""Voice vault operator API (SPEC §3 ``/v1/voices``) and its effect on realtime sessions."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.testclient import TestClient

from tests.support.voices import make_wav
from tests.support.wsclient import ProtocolClient
from vocero.app.server import create_app
from vocero.app.settings import Settings

OPERATORS = [
    {"token": "owner-token", "name": "olga", "roles": ["business_owner"]},
    {"token": "owner2-token", "name": "omar", "roles": ["business_owner"]},
    {"token": "sec-token", "name": "sam", "roles": ["security"]},
    {"token": "legal-token", "name": "lea", "roles": ["legal"]},
    {"token": "viewer-token", "name": "vic", "roles": ["viewer"]},
]
ADMIN, OWNER, OWNER2, SEC, LEGAL, VIEWER = (
    {"authorization": f"Bearer {token}"}
    for token in ("op-admin-token", "owner-token", "owner2-token", "sec-token", "legal-token",
                  "viewer-token")
)
VOICE = {
    "voice_id": "corp-en", "tenant": "acme", "owner": "Brand team",
    "purpose": "Agent voice for customer calls", "languages": ["en", "es-ES"],
    "usage_until": "2099-01-01T00:00:00Z", "consent_ref": "consent-2026-001",
}
REF_TEXT = "Hello, this is the Acme assistant."
PROFILE = {
    "id": "voiced", "version": "1", "match": {"tenant": "acme", "roles": ["customer"]},
    "instructions": "Be brief.", "voice": {"profile_id": "corp-en", "version": "1"},
}


@pytest.fixture
def app_settings(sim_settings: Settings, tmp_path: Path) -> Settings:
    operators = tmp_path / "operators.yaml"
    operators.write_text(yaml.safe_dump(OPERATORS))
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "voiced.yaml").write_text(yaml.safe_dump(PROFILE))
    return replace(sim_settings, operators=str(operators), profiles=str(profiles))


@pytest.fixture
def api(app_settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(app_settings)) as client:
        yield client


def version_body(audio: bytes | None = None) -> dict[str, str]:
    wav = audio if audio is not None else make_wav(1.5)
    return {"ref_audio": base64.b64encode(wav).decode(), "ref_text": REF_TEXT}


def approved(api: TestClient) -> None:
    assert api.post("/v1/voices", json=VOICE, headers=OWNER).status_code == 201
    assert api.post("/v1/voices/corp-en/versions", json=version_body(),
                    headers=OWNER).status_code == 201
    for headers in (OWNER, SEC):
        assert api.post("/v1/voices/corp-en/versions/1/approvals",
                        headers=headers).status_code == 200


def test_full_lifecycle(api: TestClient) -> None:
    created = api.post("/v1/voices", json=VOICE, headers=OWNER)
    assert created.status_code == 201
    voice = created.json()
    assert {k: voice[k] for k in VOICE if k != "usage_until"} == {
        k: v for k, v in VOICE.items() if k != "usage_until"}
    assert voice["usage_until"].startswith("2099-01-01T00:00:00")
    assert (voice["status"], voice["versions"]) == ("active", [])

    wav = make_wav(2.0, rate=24_000)
    added = api.post("/v1/voices/corp-en/versions", json=version_body(wav), headers=OWNER)
    assert added.status_code == 201
    version = added.json()
    assert (version["version"], version["status"], version["engine_voice"]) == (1, "pending", "")
    assert len(version["audio_sha256"]) == 64 and len(version["text_sha256"]) == 64

    first = api.post("/v1/voices/corp-en/versions/1/approvals", headers=OWNER)
    assert first.status_code == 200
    assert first.json()["status"] == "pending"
    again = api.post("/v1/voices/corp-en/versions/1/approvals", headers=OWNER)
    assert (again.status_code, again.json()["error"]) == (409, "same_operator")
    same_role = api.post("/v1/voices/corp-en/versions/1/approvals", headers=OWNER2)
    assert (same_role.status_code, same_role.json()["error"]) == (409, "same_role")
    second = api.post("/v1/voices/corp-en/versions/1/approvals", headers=SEC).json()
    assert second["status"] == "approved"
    assert [(a["operator"], a["role"]) for a in second["approvals"]] == [
        ("olga", "business_owner"), ("sam", "security")]

    shown = api.get("/v1/voices/corp-en", headers=LEGAL)
    assert shown.status_code == 200
    assert [v["status"] for v in shown.json()["versions"]] == ["approved"]
    text = shown.text
    assert "ref_audio" not in text and "ref_text" not in text and REF_TEXT not in text
    assert base64.b64encode(wav).decode()[:40] not in text

    revoked = api.post("/v1/voices/corp-en/revoke", json={"reason": "consent withdrawn"},
                       headers=SEC)
    assert revoked.status_code == 200
    assert revoked.json()["status"] == "revoked"
    shown = api.get("/v1/voices/corp-en", headers=ADMIN).json()
    assert [v["status"] for v in shown["versions"]] == ["revoked"]
    late = api.post("/v1/voices/corp-en/versions/1/approvals", headers=LEGAL)
    assert (late.status_code, late.json()["error"]) == (409, "voice_revoked")

    kinds = [e["kind"] for e in api.get("/v1/audit", headers=ADMIN).json()["items"]]
    assert [k for k in kinds if k.startswith("voice.")] == [
        "voice.created", "voice.version_added", "voice.approval_recorded",
        "voice.approval_refused", "voice.approval_refused", "voice.approval_recorded",
        "voice.approved", "voice.revoked", "voice.approval_refused",
    ]


ROUTES: list[tuple[str, str, dict[str, Any] | None]] = [
    ("POST", "/v1/voices", VOICE),
    ("POST", "/v1/voices/corp-en/versions", {"ref_audio": "", "ref_text": ""}),
    ("POST", "/v1/voices/corp-en/versions/1/approvals", None),
    ("POST", "/v1/voices/corp-en/revoke", {"reason": "x"}),
    ("GET", "/v1/voices/corp-en", None),
]
ALLOWED = {
    "/v1/voices": {"admin", "owner"},
    "/v1/voices/corp-en/versions": {"admin", "owner"},
    "/v1/voices/corp-en/versions/1/approvals": {"admin", "owner", "security", "legal"},
    "/v1/voices/corp-en/revoke": {"admin", "owner", "security"},
    "/v1/voices/corp-en": {"admin", "owner", "security", "legal"},
}


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
def test_bearer_token_and_roles(
    api: TestClient, method: str, path: str, body: dict[str, Any] | None
) -> None:
    assert api.request(method, path, json=body).status_code == 401
    assert api.request(method, path, json=body,
                       headers={"authorization": "Bearer nope"}).status_code == 401
    who = {"admin": ADMIN, "owner": OWNER, "security": SEC, "legal": LEGAL, "viewer": VIEWER}
    for name, headers in who.items():
        status = api.request(method, path, json=body, headers=headers).status_code
        assert (status == 403) == (name not in ALLOWED[path]), (name, status)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (version_body(make_wav(channels=2)), "invalid_wav"),
        (version_body(make_wav(0.3)), "invalid_wav"),
        (version_body(b"not a wav at all"), "invalid_wav"),
        ({"ref_audio": "%%%not-base64%%%", "ref_text": REF_TEXT}, "invalid_wav"),
        ({"ref_audio": "UklGRg==", "ref_text": ""}, "invalid_body"),
        ({"ref_audio": "UklGRg==", "ref_text": REF_TEXT, "extra": 1}, "invalid_body"),
        ({"ref_text": REF_TEXT}, "invalid_body"),
        ({**version_body(), "engine_voice": "../voices/x"}, "invalid_engine_voice"),
        ({**version_body(), "engine_voice": "two words"}, "invalid_engine_voice"),
        ({**version_body(), "engine_voice": "v" * 65}, "invalid_body"),
    ],
)
def test_bad_versions_are_refused(api: TestClient, body: dict[str, Any], code: str) -> None:
    api.post("/v1/voices", json=VOICE, headers=OWNER)
    refused = api.post("/v1/voices/corp-en/versions", json=body, headers=OWNER)
    assert (refused.status_code, refused.json()["error"]["code"]) == (400, code)
    assert set(refused.json()["error"]) == {"code", "field", "reason"}
    assert api.get("/v1/voices/corp-en", headers=OWNER).json()["versions"] == []


def test_bad_requests_and_conflicts(api: TestClient) -> None:
    naive = {**VOICE, "usage_until": "2099-01-01T00:00:00"}
    past = {**VOICE, "usage_until": "2001-01-01T00:00:00Z"}
    for body, code in [(naive, "invalid_body"), (past, "invalid_usage_until"),
                       ({**VOICE, "voice_id": "bad id"}, "invalid_body"),
                       ({**VOICE, "languages": []}, "invalid_body")]:
        refused = api.post("/v1/voices", json=body, headers=OWNER)
        assert (refused.status_code, refused.json()["error"]["code"]) == (400, code)
    garbled = api.post("/v1/voices", content=b"{", headers=OWNER)
    assert (garbled.status_code, garbled.json()["error"]["code"]) == (400, "invalid_json")
    assert api.post("/v1/voices", json=VOICE, headers=OWNER).status_code == 201
    duplicate = api.post("/v1/voices", json=VOICE, headers=ADMIN)
    assert (duplicate.status_code, duplicate.json()["error"]) == (409, "already_exists")
    for method, path, body in [
        ("GET", "/v1/voices/ghost", None),
        ("POST", "/v1/voices/ghost/versions", version_body()),
        ("POST", "/v1/voices/ghost/versions/1/approvals", None),
        ("POST", "/v1/voices/ghost/revoke", {"reason": "x"}),
    ]:
        missing = api.request(method, path, json=body, headers=ADMIN)
        assert (missing.status_code, missing.json()["error"]) == (404, "voice_not_found")
    no_version = api.post("/v1/voices/corp-en/versions/7/approvals", headers=SEC)
    assert (no_version.status_code, no_version.json()["error"]) == (404, "version_not_found")
    huge = api.post("/v1/voices/corp-en/versions", headers=OWNER,
                    content=b'{"ref_audio": "' + b"A" * (7 * 1024 * 1024) + b'"}')
    assert (huge.status_code, huge.json()["error"]) == (413, "body_too_large")


# --------------------------------------------------------------------- realtime sessions


def session_opens(api: TestClient) -> dict[str, Any] | None:
    """The effective configuration of a new session, or ``None`` when it was refused: an
    ``error.v1`` ``VOICE_UNAVAILABLE`` (SPEC §3) and close 4403."""
    with api.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.send("session.connect.v1", {"token": "demo-token"})
        frame = pc.receive()
        if frame["type"] == "vocero.error.v1":
            assert frame["data"]["payload"]["code"] == "VOICE_UNAVAILABLE"
            assert pc.expect_close() == 4403
            return None
        assert frame["type"] == "vocero.session.configuration_applied.v1"
        return dict(frame["data"]["payload"]["effective"])


def denied_voices(api: TestClient) -> list[dict[str, Any]]:
    assert api.portal is not None
    api.portal.call(api.app.state.runtime.audits_settled)  # type: ignore[attr-defined]
    items = api.get("/v1/audit", headers=ADMIN).json()["items"]
    return [e["data"] for e in items if e["kind"] == "session.voice_denied"]


def test_a_profile_voice_must_exist_and_be_approved(api: TestClient) -> None:
    assert session_opens(api) is None  # unknown voice
    api.post("/v1/voices", json=VOICE, headers=OWNER)
    api.post("/v1/voices/corp-en/versions", json=version_body(), headers=OWNER)
    api.post("/v1/voices/corp-en/versions/1/approvals", headers=OWNER)
    assert session_opens(api) is None  # pending: one approval only
    assert len(denied_voices(api)) == 2
    assert denied_voices(api)[0] == {"tenant_id": "acme", "profile_id": "voiced",
                                     "voice_profile_id": "corp-en", "voice_version": "1",
                                     "reason_code": "voice_unavailable"}


def test_an_approved_voice_speaks_until_revoked(api: TestClient) -> None:
    approved(api)
    effective = session_opens(api)
    assert effective is not None
    assert (effective["voice_profile_id"], effective["voice_version"]) == ("corp-en", "1")
    runtime = api.app.state.runtime  # type: ignore[attr-defined]
    with api.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect()
        ctx = runtime.live[pc.session_id].ctx
        assert ctx.voice.ref_text == REF_TEXT and ctx.voice.ref_audio.startswith(b"RIFF")
        assert ctx.voice_usable()
        api.post("/v1/voices/corp-en/revoke", json={"reason": "complaint"}, headers=OWNER)
        assert not ctx.voice_usable()  # refused before the next spoken unit
    assert session_opens(api) is None


def test_the_default_voice_needs_no_vault(client: TestClient) -> None:
    with client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        effective = pc.connect()["data"]["payload"]["effective"]
        assert (effective["voice_profile_id"], effective["voice_version"]) == (
            "builtin", "default")
        assert client.app.state.runtime.live[pc.session_id].ctx.voice_usable()  # type: ignore[attr-defined]
