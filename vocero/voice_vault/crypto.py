"""Encryption at rest of reference recordings and transcripts (AES-256-GCM, ``cryptography``).

A sealed blob is ``0x01 || nonce (12 bytes) || ciphertext+tag``. The associated data names the
voice, version and field, so a blob copied onto another row does not decrypt. The key comes from
``VOCERO_VAULT_KEY`` (base64 of 32 bytes) or from a key file created once with mode 0600; the
key is never logged, and errors name the source, never the value. :func:`load_key` returns a
:class:`VaultKey`: its ``repr`` is redacted, and while it lives its text forms are known to the
log scrubber (:func:`vocero.contracts.secrets.scrub`), as every other secret Vocero holds.
"""

from __future__ import annotations

import base64
import binascii
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import structlog
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from vocero.contracts.secrets import REDACTED, Secret
from vocero.voice_vault.errors import VaultKeyError

log = structlog.get_logger("vocero.voice_vault")

KEY_ENV = "VOCERO_VAULT_KEY"
KEY_FILE_ENV = "VOCERO_VAULT_KEY_FILE"
KEY_BYTES = 32
_FORMAT = b"\x01"
_NONCE_BYTES = 12


class VaultKey:
    """The vault key: 32 bytes that print as ``[redacted]``. Its base64 forms (standard, and
    URL-safe as ``VOCERO_VAULT_KEY`` may give it) are held as :class:`Secret` values, so text
    quoting the key is scrubbed before it is logged, for as long as the key is in use."""

    __slots__ = ("_key", "_texts")

    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_BYTES:
            raise VaultKeyError(f"the vault key must be {KEY_BYTES} bytes")
        self._key = bytes(key)
        # Unpadded, so one form is never a prefix of another: the padded text scrubs to
        # "[redacted]=", the key material gone either way.
        forms = {base64.b64encode(key), base64.urlsafe_b64encode(key)}
        self._texts = tuple(Secret(f.decode("ascii").rstrip("=")) for f in forms)

    def reveal(self) -> bytes:
        """The key itself, for the cipher."""
        return self._key

    def __repr__(self) -> str:
        return f"VaultKey({REDACTED!r})"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise TypeError("a VaultKey is not pickled")


class VaultCipher:
    def __init__(self, key: VaultKey | bytes) -> None:
        self._key = key if isinstance(key, VaultKey) else VaultKey(key)  # kept: it scrubs logs
        self._aead = AESGCM(self._key.reveal())

    def seal(self, plaintext: bytes, context: str) -> bytes:
        nonce = secrets.token_bytes(_NONCE_BYTES)
        return _FORMAT + nonce + self._aead.encrypt(nonce, plaintext, context.encode())

    def open(self, blob: bytes, context: str) -> bytes:
        """The plaintext; :class:`VaultKeyError` when the blob is not ours or was altered."""
        if blob[:1] != _FORMAT or len(blob) < 1 + _NONCE_BYTES:
            raise VaultKeyError("unknown sealed-blob format")
        nonce, sealed = blob[1 : 1 + _NONCE_BYTES], blob[1 + _NONCE_BYTES :]
        try:
            return self._aead.decrypt(nonce, sealed, context.encode())
        except InvalidTag:
            raise VaultKeyError("sealed blob does not verify with this key") from None

    def seal_text(self, text: str, context: str) -> str:
        return base64.b64encode(self.seal(text.encode(), context)).decode("ascii")

    def open_text(self, sealed: str, context: str) -> str:
        return self.open(base64.b64decode(sealed), context).decode()


def load_key(default_file: Path, environ: Mapping[str, str] = os.environ) -> VaultKey:
    """The key from ``VOCERO_VAULT_KEY``; else the file ``VOCERO_VAULT_KEY_FILE`` or
    ``default_file``, created with a fresh random key (mode 0600) when it does not exist."""
    if environ.get(KEY_ENV):
        return VaultKey(_decode(environ[KEY_ENV], KEY_ENV))
    path = Path(environ.get(KEY_FILE_ENV) or default_file)
    try:
        return VaultKey(_read_key_file(path))
    except FileNotFoundError:
        return VaultKey(_create_key_file(path))


def _decode(text: str, source: str) -> bytes:
    value = text.strip()
    try:
        key = base64.b64decode(value + "=" * (-len(value) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise VaultKeyError(f"{source} is not base64") from None
    if len(key) != KEY_BYTES:
        raise VaultKeyError(f"{source} must decode to {KEY_BYTES} bytes")
    return key


def _read_key_file(path: Path) -> bytes:
    key = _decode(path.read_text(encoding="ascii"), str(path))
    if path.stat().st_mode & 0o077:
        log.warning("vault.key_file_permissions", path=str(path), expected="0600")
    return key


def _create_key_file(path: Path) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(KEY_BYTES)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process created it first: use theirs
        return _read_key_file(path)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(base64.b64encode(key).decode("ascii") + "\n")
    log.info("vault.key_created", path=str(path))
    return key
