"""Encryption at rest: AES-GCM round trip, binding to the row, and where the key comes from."""

from __future__ import annotations

import base64
import gc
import pickle
import stat
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from tests.support.voices import make_wav
from vocero.contracts.secrets import scrub
from vocero.voice_vault import VaultCipher, VaultKeyError, load_key

KEY = bytes(range(32))
KEY_TEXT = base64.b64encode(KEY).decode().rstrip("=")


def test_round_trip_and_the_blob_is_not_the_plaintext() -> None:
    cipher = VaultCipher(KEY)
    audio = make_wav()
    blob = cipher.seal(audio, "vocero.voice/v/1/audio")
    assert blob != audio
    assert audio[44:108] not in blob  # no stretch of the samples survives
    assert b"RIFF" not in blob
    assert cipher.open(blob, "vocero.voice/v/1/audio") == audio
    assert cipher.seal(audio, "c") != cipher.seal(audio, "c")  # fresh nonce every time


def test_text_round_trip() -> None:
    cipher = VaultCipher(KEY)
    sealed = cipher.seal_text("Hola, soy la voz de Acme.", "ctx")
    assert "Hola" not in sealed
    assert cipher.open_text(sealed, "ctx") == "Hola, soy la voz de Acme."


@pytest.mark.parametrize(
    ("key", "context", "tamper"),
    [
        (bytes(32), "vocero.voice/v/1/audio", False),  # another key
        (KEY, "vocero.voice/v/2/audio", False),  # copied onto another version
        (KEY, "vocero.voice/v/1/audio", True),  # altered
    ],
)
def test_a_blob_opens_only_with_its_key_context_and_bytes(
    key: bytes, context: str, tamper: bool
) -> None:
    blob = VaultCipher(KEY).seal(b"reference", "vocero.voice/v/1/audio")
    if tamper:
        blob = blob[:-1] + bytes([blob[-1] ^ 1])
    with pytest.raises(VaultKeyError):
        VaultCipher(key).open(blob, context)


def test_key_from_the_environment(tmp_path: Path) -> None:
    encoded = base64.b64encode(KEY).decode()
    assert load_key(tmp_path / "unused.key", {"VOCERO_VAULT_KEY": encoded}).reveal() == KEY
    urlsafe = base64.urlsafe_b64encode(KEY).decode().rstrip("=")
    assert load_key(tmp_path / "unused.key", {"VOCERO_VAULT_KEY": urlsafe}).reveal() == KEY
    assert not (tmp_path / "unused.key").exists()


@pytest.mark.parametrize("value", ["not base64!", base64.b64encode(b"short").decode()])
def test_a_bad_environment_key_is_refused_without_echoing_it(tmp_path: Path, value: str) -> None:
    with pytest.raises(VaultKeyError) as caught:
        load_key(tmp_path / "k", {"VOCERO_VAULT_KEY": value})
    assert value not in str(caught.value)


def test_key_file_is_created_once_with_mode_0600_and_never_logged(tmp_path: Path) -> None:
    path = tmp_path / "var" / "vault.key"
    with capture_logs() as logs:
        first = load_key(path, {})
        second = load_key(path, {})
    assert first.reveal() == second.reveal() and len(first.reveal()) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [entry["event"] for entry in logs] == ["vault.key_created"]
    encoded = base64.b64encode(first.reveal()).decode()
    assert all(encoded not in str(entry) for entry in logs)


def test_key_file_path_from_the_environment(tmp_path: Path) -> None:
    chosen = tmp_path / "elsewhere.key"
    key = load_key(tmp_path / "default.key", {"VOCERO_VAULT_KEY_FILE": str(chosen)})
    assert chosen.exists() and not (tmp_path / "default.key").exists()
    again = load_key(tmp_path / "default.key", {"VOCERO_VAULT_KEY_FILE": str(chosen)})
    assert again.reveal() == key.reveal()


def test_a_readable_key_file_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "vault.key"
    path.write_text(base64.b64encode(KEY).decode())
    path.chmod(0o644)
    with capture_logs() as logs:
        assert load_key(path, {}).reveal() == KEY
    assert [entry["event"] for entry in logs] == ["vault.key_file_permissions"]


def test_the_key_prints_redacted_and_its_text_is_scrubbed_while_in_use(tmp_path: Path) -> None:
    encoded = base64.b64encode(KEY).decode()
    urlsafe = base64.urlsafe_b64encode(KEY).decode().rstrip("=")
    key = load_key(tmp_path / "unused.key", {"VOCERO_VAULT_KEY": urlsafe})
    assert repr(key) == str(key) == f"{key}" == "VaultKey('[redacted]')"
    assert repr([key]) == "[VaultKey('[redacted]')]"  # inside a container, a traceback frame
    with pytest.raises(TypeError):
        pickle.dumps(key)
    quoted = f"VOCERO_VAULT_KEY={urlsafe} (was {encoded})"
    assert KEY_TEXT not in scrub(quoted)
    assert scrub(quoted) == "VOCERO_VAULT_KEY=[redacted] (was [redacted]=)"
    cipher = VaultCipher(key)
    del key
    gc.collect()
    assert scrub(quoted) == "VOCERO_VAULT_KEY=[redacted] (was [redacted]=)"  # the cipher has it
    assert cipher.open(VaultCipher(KEY).seal(b"x", "c"), "c") == b"x"
