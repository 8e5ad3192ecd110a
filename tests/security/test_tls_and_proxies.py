"""SPEC §11 "TLS and proxies": ``--ssl-certfile/--ssl-keyfile`` serve https and wss (a real
``vocero serve`` with a self-signed certificate made here with cryptography), and
``--forwarded-allow-ips``: only from those addresses is ``X-Forwarded-For`` believed, so the
per-address pending limit (``--max-pending-per-address``) counts the client behind a trusted
proxy, and a forged header from anyone else changes nothing.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import sys
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
import websockets.sync.client as ws_client
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from starlette.testclient import TestClient, WebSocketDenialResponse

from tests.conftest import DEMO_SCRIPT
from tests.security.support import CALLER_TOKEN, frame, settings
from tests.support.db import migrated_copy
from tests.support.servers import READY_LINE, ServerProcess, free_port
from tests.support.wsclient import ProtocolClient
from vocero.app.server import create_app

PLAIN_PROFILE = {
    "id": "plain", "version": "1", "match": {"tenant": "acme", "roles": ["customer"]},
    "instructions": "Answer in one short sentence.",
}


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "vocero test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    certfile, keyfile = folder / "cert.pem", folder / "key.pem"
    certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    return certfile, keyfile


@pytest.mark.process
def test_wss_and_https_with_the_servers_own_tls(tmp_path: Path) -> None:
    certfile, keyfile = self_signed(tmp_path)
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump(DEMO_SCRIPT))
    profiles = tmp_path / "profiles"  # one profile without tool servers: a quick start
    profiles.mkdir()
    (profiles / "plain.yaml").write_text(yaml.safe_dump(PLAIN_PROFILE))
    port = free_port()
    command = [
        sys.executable, "-m", "vocero", "serve", "--runners", "sim", "--port", str(port),
        "--db", migrated_copy(tmp_path / "vocero.db"), "--sim-script", str(script),
        "--profiles", str(profiles),
        "--ssl-certfile", str(certfile), "--ssl-keyfile", str(keyfile),
    ]  # fmt: skip
    server = ServerProcess("vocero serve (tls)", command, port=port, ready_line=READY_LINE,
                           log=tmp_path / "serve.log")  # fmt: skip
    trusted = ssl.create_default_context(cafile=str(certfile))
    with ExitStack() as stack:  # one process, stopped at the end (``with server.spawn()``
        server.spawn()  # started a second one through __enter__ and left the first running)
        stack.callback(server.stop)
        server.wait_ready(180)  # a loaded machine takes a while to import and start
        assert server.announced == f"vocero listening on https://127.0.0.1:{port}"
        assert httpx.get(f"https://127.0.0.1:{port}/healthz", verify=trusted).status_code == 200
        with ws_client.connect(f"wss://127.0.0.1:{port}/v1/realtime", ssl=trusted) as conn:
            conn.send(frame("session.connect.v1", {"token": CALLER_TOKEN}, sequence=1))
            first = json.loads(conn.recv(timeout=30))
        assert first["type"] == "vocero.session.configuration_applied.v1"
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):  # untrusted
            httpx.get(f"https://127.0.0.1:{port}/healthz", verify=ssl.create_default_context())


def _pending(client: TestClient, stack: ExitStack, forwarded_for: str) -> None:
    stack.enter_context(client.websocket_connect(
        "/v1/realtime", headers={"x-forwarded-for": forwarded_for}))


@pytest.mark.process
def test_behind_a_trusted_proxy_the_forwarded_client_is_counted(tmp_path: Path) -> None:
    # The test client's own address is "testclient": here it is the trusted proxy.
    chosen = settings(tmp_path, max_pending_per_address=1, forwarded_allow_ips="testclient")
    with TestClient(create_app(chosen)) as client, ExitStack() as stack:
        _pending(client, stack, "203.0.113.7")
        _pending(client, stack, "203.0.113.8")  # another client behind the same proxy
        with pytest.raises(WebSocketDenialResponse) as refused:
            _pending(client, stack, "203.0.113.7")
        assert refused.value.status_code == 429
        with client.websocket_connect("/v1/realtime",
                                      headers={"x-forwarded-for": "198.51.100.1"}) as ws:
            ProtocolClient(ws).connect()


@pytest.mark.process
def test_from_an_untrusted_address_the_header_is_ignored(tmp_path: Path) -> None:
    chosen = settings(tmp_path, max_pending_per_address=1, forwarded_allow_ips="10.9.9.9")
    with TestClient(create_app(chosen)) as client, ExitStack() as stack:
        _pending(client, stack, "203.0.113.7")
        with pytest.raises(WebSocketDenialResponse) as refused:  # still the one address
            _pending(client, stack, "203.0.113.8")
        assert refused.value.status_code == 429


@pytest.mark.process
def test_without_the_flag_no_forwarded_header_is_believed(tmp_path: Path) -> None:
    chosen = settings(tmp_path, max_pending_per_address=1)
    with TestClient(create_app(chosen)) as client, ExitStack() as stack:
        _pending(client, stack, "203.0.113.7")
        with pytest.raises(WebSocketDenialResponse):
            _pending(client, stack, "203.0.113.8")
