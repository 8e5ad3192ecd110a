"""Operator bearer JWTs (SPEC §11 "Operators", docs/operators.md "Operators from the identity
provider"): ``--operator-jwks/--operator-issuer/--operator-audience``; claims ``roles``,
``tenants``, ``name``/``sub``. A token that does not verify answers 401 and is never logged."""

from __future__ import annotations

import argparse
import base64
import json
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from joserfc import jwt
from joserfc.errors import SecurityWarning
from joserfc.jwk import ECKey, OKPKey, RSAKey
from starlette.testclient import TestClient

from tests.conftest import DEMO_SCRIPT, write_script
from tests.support.db import migrated_copy
from vocero.app.commands.print_config import effective_config
from vocero.app.server import create_app
from vocero.app.settings import Settings, add_serve_arguments, settings_from
from vocero.store.repositories import Conversations

ISSUER, AUDIENCE = "https://idp.example.test/", "vocero-operators"


def _pem(private: Any) -> bytes:
    return bytes(private.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))


def rsa_key(kid: str) -> RSAKey:
    return RSAKey.import_key(_pem(rsa.generate_private_key(65537, 2048)), {"kid": kid})


KEYS = {
    "RS256": rsa_key("rsa-1"),
    "ES256": ECKey.import_key(_pem(ec.generate_private_key(ec.SECP256R1())), {"kid": "ec-1"}),
    "EdDSA": OKPKey.import_key(_pem(ed25519.Ed25519PrivateKey.generate()), {"kid": "ed-1"}),
}
STRANGER = rsa_key("rsa-stranger")
"""A key the JWKS does not hold."""
IMPOSTOR = rsa_key("rsa-1")
"""Another key under a ``kid`` the JWKS holds."""


def claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    base = {"iss": ISSUER, "aud": AUDIENCE, "sub": "u-123", "name": "jo", "iat": now,
            "exp": now + 300, "roles": ["security"], "tenants": ["tenant-a"]}
    return {**base, **overrides}


def sign(payload: dict[str, Any], alg: str = "RS256", key: Any = None) -> str:
    key = key or KEYS[alg]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SecurityWarning)  # EdDSA: SPEC §11 names it
        return jwt.encode({"alg": alg, "kid": key.kid}, payload, key, algorithms=[alg])


def unsigned(header: dict[str, Any], payload: dict[str, Any], signature: bytes = b"x") -> str:
    def part(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    return ".".join([part(json.dumps(header).encode()), part(json.dumps(payload).encode()),
                     part(signature)])


def jwks(tmp_path: Path) -> str:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [k.as_dict(private=False) for k in KEYS.values()]}))
    return str(path)


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    tmp_path = tmp_path_factory.mktemp("operator_jwt")
    settings = Settings(
        runners="sim", db=migrated_copy(tmp_path / "vocero.db", driver="sqlite+aiosqlite"),
        sim_script=write_script(tmp_path / "script.yaml", DEMO_SCRIPT),
        operator_token="op-admin-token", followups_tick_s=0,
        operator_jwks=jwks(tmp_path), operator_issuer=ISSUER, operator_audience=AUDIENCE)
    with TestClient(create_app(settings)) as client:
        assert client.portal is not None
        client.portal.call(_sessions, client.app.state.runtime)  # type: ignore[attr-defined]
        yield client


async def _sessions(runtime: Any) -> None:
    for tenant, session_id in (("tenant-a", "ses_ja"), ("tenant-b", "ses_jb")):
        await Conversations(runtime.store).create_session(
            session_id=session_id, tenant_id=tenant, subject_ref="sub", profile_id="p",
            profile_version="1")


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


@pytest.mark.parametrize("alg", sorted(KEYS))
def test_a_valid_operator_jwt_sees_its_tenants_only(app: TestClient, alg: str) -> None:
    token = sign(claims(), alg)
    listed = app.get("/v1/sessions", headers=bearer(token)).json()["items"]
    assert [s["session_id"] for s in listed] == ["ses_ja"]
    assert app.get("/v1/sessions/ses_jb", headers=bearer(token)).status_code == 404
    assert app.get("/v1/sessions/ses_ja", headers=bearer(token)).status_code == 200


def test_platform_admin_jwt_sees_every_tenant(app: TestClient) -> None:
    token = sign(claims(roles=["security", "platform_admin"], tenants=[]))
    listed = app.get("/v1/sessions", headers=bearer(token)).json()["items"]
    assert {s["session_id"] for s in listed} == {"ses_ja", "ses_jb"}


def test_string_claims_are_space_separated_and_others_are_refused(app: TestClient) -> None:
    token = sign(claims(roles="security", tenants="tenant-a tenant-b"))
    listed = app.get("/v1/sessions", headers=bearer(token)).json()["items"]
    assert {s["session_id"] for s in listed} == {"ses_ja", "ses_jb"}
    assert app.get("/v1/sessions", headers=bearer(sign(claims(tenants={"a": 1})))
                   ).status_code == 401


def test_jwt_roles_gate_routes_and_no_tenants_sees_nothing(app: TestClient) -> None:
    assert app.get("/v1/sessions", headers=bearer(sign(claims(roles=["viewer"])))
                   ).status_code == 403
    nothing = sign(claims(tenants=None))
    assert app.get("/v1/sessions", headers=bearer(nothing)).json() == {"items": []}
    assert app.get("/v1/sessions/ses_ja", headers=bearer(nothing)).status_code == 404


REFUSED = {
    "unknown_key": lambda: sign(claims(), key=STRANGER),
    "bad_signature": lambda: sign(claims(), key=IMPOSTOR),
    "wrong_issuer": lambda: sign(claims(iss="https://other.example.test/")),
    "wrong_audience": lambda: sign(claims(aud="someone-else")),
    "token_expired": lambda: sign(claims(exp=int(time.time()) - 120)),
    "not_yet_valid": lambda: sign(claims(nbf=int(time.time()) + 120)),
    "unsupported_algorithm": lambda: unsigned({"alg": "none", "kid": "rsa-1"}, claims(), b""),
    "hmac": lambda: unsigned({"alg": "HS256", "kid": "rsa-1"}, claims()),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_bad_operator_jwt_is_401_and_never_logged(app: TestClient, case: str) -> None:
    token = REFUSED[case]()
    with structlog.testing.capture_logs() as logs:
        response = app.get("/v1/sessions", headers=bearer(token))
    assert response.status_code == 401
    assert token not in json.dumps(logs, default=str)
    assert token.split(".")[1] not in json.dumps(logs, default=str)
    refusals = [e for e in logs if e["event"] == "operator.token_refused"]
    expected = "unsupported_algorithm" if case == "hmac" else case
    assert [e["reason_code"] for e in refusals] == [expected]


def test_within_the_skew_a_token_still_holds(app: TestClient) -> None:
    """``exp`` 30 s ago and ``nbf`` 30 s ahead are inside the 60 s skew."""
    now = int(time.time())
    for token in (sign(claims(exp=now - 30)), sign(claims(nbf=now + 30))):
        assert app.get("/v1/sessions", headers=bearer(token)).status_code == 200


def test_the_operator_jwt_flags_and_env_twins_show_in_print_config(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VOCERO_OPERATOR_ISSUER", ISSUER)
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    argv = ["--operator-jwks", "https://idp.example.test/jwks", "--operator-audience", AUDIENCE]
    settings = settings_from(parser.parse_args(argv))
    config = effective_config(settings, argv)
    assert config["operator_jwks"] == {"value": "https://idp.example.test/jwks",
                                       "source": "flag"}
    assert config["operator_issuer"] == {"value": ISSUER, "source": "env",
                                         "env": "VOCERO_OPERATOR_ISSUER"}
    assert config["operator_audience"] == {"value": AUDIENCE, "source": "flag"}
