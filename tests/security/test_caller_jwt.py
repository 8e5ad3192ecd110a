"""SPEC §11 "Callers": ``session.connect.v1`` tokens that are JWTs, verified against a real local
identity provider (``tests/support/idp.py``: keys made with cryptography, a JWKS over HTTP).

Every way a JWT is refused closes 4401 after ``AUTH_DENIED`` with its own reason code, in an
audit event without a session (listed by ``GET /v1/audit`` without ``session_id``) and in
``vocero_denials_total``; the token is in neither, nor in the log. A valid token of each
algorithm opens a session whose identity comes from the claims; a rotated key is picked up
without a restart, and refetches of the JWKS are bounded.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from starlette.testclient import TestClient

from tests.security.support import ADMIN, captured_logs, settings
from tests.support.idp import AUDIENCE, ISSUER, IdentityProvider, identity_provider, new_key
from tests.support.wsclient import ProtocolClient
from vocero.app.server import create_app
from vocero.contracts.domain import Caller
from vocero.identity.caller_jwt import (
    CallerJwtSettings,
    CallerJwtVerifier,
    ClaimNames,
    TokenDenied,
)
from vocero.identity.jwks import KeySource


@dataclass
class Served:
    client: TestClient
    idp: IdentityProvider
    logs: object


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp_path = tmp_path_factory.mktemp("jwt")
    with identity_provider() as idp, captured_logs("json") as logs:
        chosen = settings(tmp_path, caller_jwks=idp.jwks_url, caller_issuer=ISSUER,
                          caller_audience=AUDIENCE)  # fmt: skip
        with TestClient(create_app(chosen)) as client:
            assert client.portal is not None
            client.portal.call(client.app.state.runtime.ready.wait)  # type: ignore[attr-defined]
            yield Served(client, idp, logs)


def _refused(client: TestClient, token: str) -> tuple[list[str], int]:
    with client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.send("session.connect.v1", {"token": token})
        code = pc.expect_close()
    return [e["code"] for e in pc.of_type("error.v1")], code


def _denials(client: TestClient, reason: str) -> float:
    text = client.get("/metrics").text
    found = re.search(rf'vocero_denials_total{{reason_code="{reason}"}} ([0-9.]+)', text)
    return float(found.group(1)) if found else 0.0


def _auth_denied_events(client: TestClient) -> list[dict[str, object]]:
    items = client.get("/v1/audit", headers=ADMIN).json()["items"]
    return [e for e in items if e["kind"] == "session.auth_denied"]


DENIALS: dict[str, Callable[[IdentityProvider], str]] = {
    "token_expired": lambda idp: idp.token(exp=int(time.time()) - 61 - 5),
    "not_yet_valid": lambda idp: idp.token(nbf=int(time.time()) + 61 + 30),
    "bad_signature": lambda idp: idp.token("ES256", key=new_key("ES256", "forger")),
    "wrong_issuer": lambda idp: idp.token(iss="https://other-idp.example"),
    "wrong_audience": lambda idp: idp.token("EdDSA", aud="another-service"),
    "unknown_key": lambda idp: idp.token(kid="kid-nobody-published",
                                         key=idp.keys[idp.kid_of("RS256")]),
    "unsupported_algorithm": lambda idp: idp.unsigned(),
    "malformed_token": lambda idp: "eyJhbGciOiJSUzI1NiJ9.bm90IGpzb24.c2ln",
}


@pytest.mark.parametrize("reason", sorted(DENIALS))
def test_each_refusal_closes_4401_audited_and_counted_with_its_reason(
    served: Served, reason: str
) -> None:
    client = served.client
    token = DENIALS[reason](served.idp)
    before = _denials(client, reason)
    errors, code = _refused(client, token)
    assert errors == ["AUTH_DENIED"] and code == 4401
    event = _auth_denied_events(client)[-1]
    assert not event["session_id"]  # an audit event without a session
    assert event["data"]["reason_code"] == reason  # type: ignore[index]
    assert _denials(client, reason) == before + 1
    audit = json.dumps(client.get("/v1/audit", headers=ADMIN).json())
    assert token not in audit
    assert token not in served.logs.getvalue()  # type: ignore[attr-defined]


def test_hmac_keyed_with_the_public_key_is_an_unsupported_algorithm(served: Served) -> None:
    """Key confusion: HS256 'signed' with the RSA public key the JWKS publishes."""
    errors, code = _refused(served.client, served.idp.hmac_with_public_key())
    assert (errors, code) == (["AUTH_DENIED"], 4401)
    assert _auth_denied_events(served.client)[-1]["data"]["reason_code"] == (  # type: ignore[index]
        "unsupported_algorithm"
    )


@pytest.mark.parametrize("alg", ["RS256", "ES256", "EdDSA"])
def test_a_valid_token_opens_a_session_with_the_claims_identity(served: Served, alg: str) -> None:
    client = served.client
    token = served.idp.token(alg, sub=f"user-{alg}")
    with client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect(token)
        session = client.get(f"/v1/sessions/{pc.session_id}", headers=ADMIN).json()
        pc.send("session.close.v1")
        pc.expect_close()
    expected = Caller(token="x", subject=f"user-{alg}", tenant="acme")
    assert expected.subject_ref in json.dumps(session)
    assert f"user-{alg}" not in json.dumps(session)  # the subject stays opaque
    assert token not in served.logs.getvalue()  # type: ignore[attr-defined]


def test_the_identities_file_keeps_working_beside_jwts(served: Served) -> None:
    with served.client.websocket_connect("/v1/realtime") as ws:
        ProtocolClient(ws).connect("demo-token")
    errors, code = _refused(served.client, "not-in-the-file")
    assert (errors, code) == (["AUTH_DENIED"], 4401)
    assert _auth_denied_events(served.client)[-1]["data"]["reason_code"] == (  # type: ignore[index]
        "unknown_token"
    )


def test_a_rotated_key_is_used_without_a_restart(served: Served) -> None:
    client, idp = served.client, served.idp
    with client.websocket_connect("/v1/realtime") as ws:
        ProtocolClient(ws).connect(idp.token("ES256"))
    fetched = idp.jwks_fetches
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    runtime.caller_jwt.keys.min_refetch_s = 0.0  # as if the minute since the last one has passed
    idp.rotate("ES256")
    with client.websocket_connect("/v1/realtime") as ws:
        ProtocolClient(ws).connect(idp.token("ES256"))  # new kid: refetched at once
    assert idp.jwks_fetches == fetched + 1


# --------------------------------------------------------------------- the verifier alone


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.anyio
async def test_refetches_on_unknown_kids_are_bounded_to_one_a_minute(tmp_path: Path) -> None:
    with identity_provider() as idp:
        clock = _Clock()
        keys = KeySource(idp.jwks_url, monotonic=clock)
        verifier = CallerJwtVerifier(
            CallerJwtSettings(jwks=idp.jwks_url, issuer=ISSUER, audience=AUDIENCE), keys
        )
        await verifier.verify(idp.token())
        assert idp.jwks_fetches == 1
        forged = idp.keys[idp.kid_of("RS256")]
        for n in range(5):  # a stream of made-up kids: one refetch, not five
            with pytest.raises(TokenDenied, match="unknown_key"):
                await verifier.verify(idp.token(kid=f"made-up-{n}", key=forged))
        assert idp.jwks_fetches == 2
        new_kid = idp.rotate("RS256")
        with pytest.raises(TokenDenied, match="unknown_key"):  # within the minute
            await verifier.verify(idp.token(kid=new_kid))
        clock.now += 60.0
        caller = await verifier.verify(idp.token(kid=new_kid))
        assert caller.subject == "user-1" and idp.jwks_fetches == 3


@pytest.mark.anyio
async def test_a_jwks_file_is_read_again_on_an_unknown_kid(tmp_path: Path) -> None:
    with identity_provider() as idp:
        path = tmp_path / "jwks.json"
        path.write_text(json.dumps(idp.jwks()))
        verifier = CallerJwtVerifier(
            CallerJwtSettings(jwks=str(path), issuer=ISSUER, audience=AUDIENCE),
            KeySource(str(path)),
        )
        await verifier.verify(idp.token("EdDSA"))
        kid = idp.rotate("EdDSA")
        path.write_text(json.dumps(idp.jwks()))
        assert (await verifier.verify(idp.token("EdDSA", kid=kid))).tenant == "acme"


@pytest.mark.anyio
async def test_keycloak_and_auth0_shaped_claims_map_through_configured_names() -> None:
    with identity_provider() as idp:
        keycloak = ClaimNames.parse("tenant=org_id,roles=realm_access.roles,timezone=tz")
        verifier = CallerJwtVerifier(
            CallerJwtSettings(
                jwks=idp.jwks_url, issuer=ISSUER, audience=AUDIENCE, claims=keycloak
            ),
            KeySource(idp.jwks_url),
        )
        token = idp.token(tenant=None, roles=None, zoneinfo=None, org_id="globex",
                          realm_access={"roles": ["customer", "vip"]}, tz="America/Lima",
                          aud=[AUDIENCE, "account"])  # fmt: skip
        caller = await verifier.verify(token)
        assert (caller.tenant, caller.roles, caller.timezone) == (
            "globex", ["customer", "vip"], "America/Lima"
        )
        auth0 = ClaimNames.parse("tenant=https://vocero.example/tenant,scopes=permissions")
        verifier = CallerJwtVerifier(
            CallerJwtSettings(jwks=idp.jwks_url, issuer=ISSUER, audience=AUDIENCE, claims=auth0),
            KeySource(idp.jwks_url),
        )
        claims = {"tenant": None, "https://vocero.example/tenant": "harbor",
                  "permissions": ["orders:read"]}  # fmt: skip
        token = idp.token(**claims)
        caller = await verifier.verify(token)
        assert (caller.tenant, caller.scopes) == ("harbor", ["orders:read"])
        with pytest.raises(TokenDenied, match="malformed_token"):  # no tenant claim at all
            await verifier.verify(idp.token(tenant=None))
    await anyio.lowlevel.checkpoint()


def test_the_flags_read_their_environment_twins_and_show_in_print_config(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import argparse

    from vocero.app.commands.print_config import effective_config
    from vocero.app.settings import add_serve_arguments, settings_from

    monkeypatch.setenv("VOCERO_CALLER_ISSUER", ISSUER)
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    argv = ["--caller-jwks", "https://sso.example/certs", "--caller-audience", AUDIENCE,
            "--forwarded-allow-ips", "10.0.0.2", "--ssl-certfile", "c.pem"]  # fmt: skip
    chosen = settings_from(parser.parse_args(argv))
    shown = effective_config(chosen, argv)
    assert shown["caller_jwks"] == {"value": "https://sso.example/certs", "source": "flag"}
    assert shown["caller_issuer"]["value"] == ISSUER and shown["caller_issuer"]["source"] == "env"
    assert shown["forwarded_allow_ips"]["value"] == "10.0.0.2"
    assert chosen.scheme == "https"
