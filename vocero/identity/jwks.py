"""The identity provider's published keys (a JWKS), from a URL or a file (SPEC §11).

The key set is read once and kept. A token naming a ``kid`` the kept set does not hold makes it
read again, so that a provider's key rotation needs no restart; the first such refetch happens
at once, and later ones at most once per ``min_refetch_s`` (a stream of tokens with made-up
``kid`` values cannot turn into a stream of requests to the provider). A refetch that fails
keeps the set it had.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import structlog
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, KeySet, OKPKey, RSAKey

from vocero.contracts.errors import ConfigError

log = structlog.get_logger("vocero.identity")

PublicKey = RSAKey | ECKey | OKPKey
MIN_REFETCH_S = 60.0


class JwksError(Exception):
    """The key set could not be read or is not a JWKS."""


def parse_jwks(document: Any) -> dict[str, PublicKey]:
    """The public keys of a JWKS document, by ``kid``; keys without a ``kid``, of another type
    (``oct``: HMAC secrets are never accepted) or that do not load are left out."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise JwksError("not a JWKS: expected an object with a `keys` list")
    keys: dict[str, PublicKey] = {}
    for entry in document["keys"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("kid"), str):
            continue
        if entry.get("kty") not in ("RSA", "EC", "OKP"):
            continue
        public = {k: v for k, v in entry.items() if k not in ("d", "p", "q", "dp", "dq", "qi")}
        try:
            loaded = KeySet.import_key_set({"keys": [public]}).keys[0]
        except (JoseError, ValueError, TypeError):
            log.warning("identity.jwks_key_skipped", kid=entry["kid"])
            continue
        if isinstance(loaded, RSAKey | ECKey | OKPKey):
            keys[entry["kid"]] = loaded
    return keys


class KeySource:
    """The caller JWKS of ``--caller-jwks``: an ``http(s)://`` URL or a file path."""

    def __init__(
        self,
        location: str,
        *,
        min_refetch_s: float = MIN_REFETCH_S,
        monotonic: Callable[[], float] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout_s: float = 5.0,
    ) -> None:
        self.location = location
        self.is_url = location.startswith(("http://", "https://"))
        if not self.is_url and not Path(location).is_file():
            raise ConfigError(location, "caller_jwks", "no such file (or give an http(s) URL)")
        self.min_refetch_s = min_refetch_s
        self._monotonic = monotonic or time.monotonic
        self._transport = transport
        self._timeout_s = timeout_s
        self._keys: dict[str, PublicKey] | None = None
        self._last_refetch: float | None = None
        self._lock = anyio.Lock()
        self.fetches = 0
        """How many times the set was read (tests and the benchmark read it)."""

    async def key(self, kid: str) -> PublicKey | None:
        """The key named ``kid``: from the kept set, else from the set read again when the
        refetch budget allows; ``None`` when neither holds it."""
        keys = self._keys
        if keys is not None and kid in keys:
            return keys[kid]
        async with self._lock:
            if self._keys is None:
                await self._load()
            elif kid not in self._keys and self._may_refetch():
                self._last_refetch = self._monotonic()
                await self._load()
            return (self._keys or {}).get(kid)

    async def preload(self) -> None:
        """Read the set once at start (a missing file or unreachable URL is only logged: the
        first token tries again)."""
        async with self._lock:
            if self._keys is None:
                await self._load()

    def _may_refetch(self) -> bool:
        last = self._last_refetch
        return last is None or self._monotonic() - last >= self.min_refetch_s

    async def _load(self) -> None:
        self.fetches += 1
        try:
            document = await (self._fetch() if self.is_url else self._read())
            self._keys = parse_jwks(document)
        except (JwksError, OSError, ValueError, httpx.HTTPError) as exc:
            log.warning("identity.jwks_unavailable", error=type(exc).__name__)
            if self._keys is None:
                self._keys = {}
            return
        log.info("identity.jwks_loaded", keys=len(self._keys))

    async def _fetch(self) -> Any:
        async with httpx.AsyncClient(
            timeout=httpx.Timeout(self._timeout_s), transport=self._transport,
            follow_redirects=False,
        ) as client:
            with anyio.fail_after(self._timeout_s):
                response = await client.get(self.location)
        if response.status_code != httpx.codes.OK:
            raise JwksError(f"JWKS answered {response.status_code}")
        return response.json()

    async def _read(self) -> Any:
        text = await anyio.Path(self.location).read_text()
        return json.loads(text)
