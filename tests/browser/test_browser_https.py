"""The browser client over https and wss (SPEC §11 "TLS and proxies"), in headless Chromium that
trusts one throwaway test CA and nothing else: what an operator does to try TLS locally with a
private CA (docs/deployment.md).

The CA and the server's certificate (127.0.0.1 and localhost) are made here with cryptography;
the CA is added to an NSS database (``certutil``, Debian's libnss3-tools) in the browser's own
``HOME``, which is where Chromium on Linux reads locally trusted roots. No certificate error is
ignored: the browser verifies the chain, the name and the dates as it would for any site.

The caller's credential is a JWT from the local identity provider (tests/support/idp.py), typed
into the page's token field: ``vocero serve`` verifies it against the provider's JWKS, and the
profile it gets is one that only the token's claims match.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import shutil
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from tests.support.idp import AUDIENCE, ISSUER, identity_provider

pytestmark = [pytest.mark.browser, pytest.mark.slow]

StartServer = Callable[..., Any]  # returns conftest.SimServer
OpenPage = Callable[..., Page]

ECHO_SCRIPT: dict[str, Any] = {
    "tts": {"ms_per_char": 10},
    "llm": [{"match": ".*", "reply": "You said: {last_user}"}],
}
TENANT, ROLE, PROFILE = "tls-tenant", "tls-caller", "tls-browser"
"""Claims only the test's JWT carries, and the profile they select."""
KEY_USAGE_CA = x509.KeyUsage(
    digital_signature=False, content_commitment=False, key_encipherment=False,
    data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
    encipher_only=False, decipher_only=False,
)  # fmt: skip


# ------------------------------------------------------------------- a throwaway PKI


@dataclass
class Authority:
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    def issue(self, folder: Path) -> tuple[Path, Path]:
        """A server certificate for 127.0.0.1 and localhost signed by this CA, and its key, as
        PEM files in ``folder``."""
        key = ec.generate_private_key(ec.SECP256R1())
        names = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
        cert = (
            _builder(_name("127.0.0.1"), self.cert.subject, key)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                critical=False,
            )
            .sign(self.key, hashes.SHA256())
        )
        folder.mkdir(parents=True, exist_ok=True)
        certfile, keyfile = folder / "cert.pem", folder / "key.pem"
        certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        keyfile.write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()))  # fmt: skip
        return certfile, keyfile


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(
    subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey
) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
    )


def _authority() -> Authority:
    """A self-signed CA. Every CA here has the same name: only its key tells them apart."""
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        _builder(_name("Vocero test CA"), _name("Vocero test CA"), key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(KEY_USAGE_CA, critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return Authority(cert, key)


def _trusting(home: Path, authority: Authority) -> Path:
    """A ``HOME`` whose NSS database (``.pki/nssdb``, where Chromium on Linux reads local trust)
    trusts ``authority`` to issue server certificates, and nothing else."""
    if shutil.which("certutil") is None:
        pytest.fail("no certutil (apt-get install libnss3-tools)")
    database = home / ".pki" / "nssdb"
    database.mkdir(parents=True)
    ca_pem = home / "ca.pem"
    ca_pem.write_bytes(authority.cert.public_bytes(serialization.Encoding.PEM))
    for command in (
        ["certutil", "-N", "-d", f"sql:{database}", "--empty-password"],
        ["certutil", "-A", "-d", f"sql:{database}", "-n", "vocero test CA", "-t", "C,,",
         "-i", str(ca_pem)],
    ):  # fmt: skip
        subprocess.run(command, check=True, capture_output=True, timeout=30)
    return home


@pytest.fixture
def https_site(tmp_path: Path) -> Iterator[Callable[[Path, Path], str]]:
    """Serves a small page over https with a given certificate (a standard-library server in a
    thread); returns its URL."""
    servers: list[HTTPServer] = []

    class Page_(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<!doctype html><title>site</title><p id=site>served</p>"
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    def serve(certfile: Path, keyfile: Path) -> str:
        server = HTTPServer(("127.0.0.1", 0), Page_)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certfile, keyfile)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"https://127.0.0.1:{server.server_address[1]}/"

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


def _profiles(folder: Path) -> Path:
    """One profile, selected only by the test JWT's claims (no tool servers: a quick start)."""
    folder.mkdir()
    (folder / f"{PROFILE}.yaml").write_text(yaml.safe_dump({
        "id": PROFILE, "version": "1", "match": {"tenant": TENANT, "roles": [ROLE]},
        "instructions": "Answer in one short sentence.",
    }))  # fmt: skip
    return folder


def _wait_for(page: Page, predicate: str, timeout_ms: int = 15_000) -> None:
    try:
        page.wait_for_function(f"() => window.vocero.events.some({predicate})", timeout=timeout_ms)
    except PlaywrightTimeoutError:
        events = page.evaluate(
            "window.vocero.events.map(e => e.type + ' ' + JSON.stringify(e.payload).slice(0, 160))"
        )
        pytest.fail(f"no event matching {predicate}; received:\n" + "\n".join(events))


def _of(records: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r["payload"] for r in records if r["type"] == kind]


# --------------------------------------------------------------------------------- tests


def test_typed_turn_over_wss_with_a_caller_jwt_trusting_only_a_test_ca(
    start_server: StartServer, open_page: OpenPage, tmp_path: Path
) -> None:
    authority = _authority()
    certfile, keyfile = authority.issue(tmp_path / "tls")
    with identity_provider() as idp:
        server = start_server(
            ECHO_SCRIPT, "--profiles", str(_profiles(tmp_path / "profiles")),
            "--ssl-certfile", str(certfile), "--ssl-keyfile", str(keyfile),
            "--caller-jwks", idp.jwks_url, "--caller-issuer", ISSUER,
            "--caller-audience", AUDIENCE,
        )  # fmt: skip
        assert server.url == f"https://127.0.0.1:{server.port}", server.log_tail()
        page = open_page(home=_trusting(tmp_path / "home", authority))
        sockets: list[str] = []
        page.on("websocket", lambda ws: sockets.append(ws.url))
        response = page.goto(server.url)  # raises on any certificate error
        assert response is not None and response.ok
        assert page.evaluate("[window.isSecureContext, location.protocol]") == [True, "https:"]
        assert page.evaluate("typeof navigator.mediaDevices?.getUserMedia") == "function"

        token = idp.token("ES256", sub="tls-browser-caller", tenant=TENANT, roles=[ROLE])
        page.fill("#token", token)
        page.click("#connect")
        _wait_for(page, "e => e.type === 'session.configuration_applied.v1'")
        page.fill("#text", "is this line encrypted")
        page.press("#text", "Enter")
        _wait_for(page, "e => e.type === 'response.completed.v1'")
        page.wait_for_function(  # the last chunk played out, as the caller heard it
            "() => window.vocero.sent.some(s => s.type === 'output.playout_progress.v1' "
            "&& s.payload.buffered_ms === 0)"
        )
        hook = page.evaluate("window.vocero")
        context = f"server:\n{server.log_tail()}"
        assert idp.jwks_fetches >= 1, context  # the server verified the token with the IdP

    assert sockets == [f"wss://127.0.0.1:{server.port}/v1/realtime"]
    assert _of(hook["sent"], "session.connect.v1") == [{"token": token}]
    applied = _of(hook["events"], "session.configuration_applied.v1")[0]
    assert applied["effective"]["profile_id"] == PROFILE, context  # the JWT's claims chose it
    assert f"Connected to the {PROFILE} agent" in " ".join(
        page.locator(".note").all_text_contents()
    )
    assert page.text_content(".user") == "is this line encrypted"
    assert page.text_content(".assistant .words") == "You said: is this line encrypted"
    completed = _of(hook["events"], "response.completed.v1")[0]
    assert completed["status"] == "completed", context
    assert completed["heard_text"] == "You said: is this line encrypted"
    generation = completed["generation_id"]
    chunks = [p for p in _of(hook["events"], "response.audio_delta.v1")
              if p["generation_id"] == generation]  # fmt: skip
    assert chunks, context
    assert hook["playedMs"][generation] > 0  # the page's playback worklet played it
    assert _of(hook["events"], "error.v1") == []


def test_a_certificate_from_another_ca_is_refused(
    open_page: OpenPage, https_site: Callable[[Path, Path], str], tmp_path: Path
) -> None:
    """The same browser set-up opens a page whose certificate the test CA issued, and refuses
    one from another CA (same CA name, same host, valid dates: only the issuer's key differs).
    So the first test's page is trusted because of the CA, not because errors are ignored."""
    ours, theirs = _authority(), _authority()
    trusted = https_site(*ours.issue(tmp_path / "ours"))
    foreign = https_site(*theirs.issue(tmp_path / "theirs"))
    page = open_page(home=_trusting(tmp_path / "home", ours))

    page.goto(trusted)
    assert page.text_content("#site") == "served"
    assert page.evaluate("window.isSecureContext") is True
    with pytest.raises(PlaywrightError, match="net::ERR_CERT_AUTHORITY_INVALID"):
        page.goto(foreign)
    assert page.url != foreign
