"""``vocero bench auth``: what verifying a caller JWT adds to a ``session.connect.v1`` (SPEC §11).

The provider's keys (RS256 2048-bit, ES256 P-256, EdDSA Ed25519, made here) are published in a
JWKS file and read once, as ``--caller-jwks`` reads them; every connect after that verifies
against the kept set (the cached JWKS case). Each of ``--iterations`` connects verifies a fresh
token of each algorithm through the same :class:`~vocero.identity.caller_jwt.CallerJwtVerifier`
``serve`` uses (header, key lookup, signature, ``iss``/``aud``/``exp``/``nbf``, claims to a
caller). The identities-file lookup of a plain token is measured alongside as the baseline.
Goal: p95 added cost ≤ 1 ms per connect.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from joserfc import jwt
from joserfc.errors import SecurityWarning
from joserfc.jwk import ECKey, KeySet, OKPKey, RSAKey

from vocero.bench.stats import percentiles
from vocero.contracts.domain import Caller
from vocero.contracts.secrets import Secret
from vocero.identity.caller_jwt import CallerJwtSettings, CallerJwtVerifier
from vocero.identity.identities import IdentityDirectory
from vocero.identity.jwks import KeySource

ISSUER = "https://idp.bench.example/"
AUDIENCE = "vocero-bench"
GOAL_P95_MS = 1.0


def _keys() -> dict[str, RSAKey | ECKey | OKPKey]:
    return {
        "RS256": RSAKey.generate_key(2048, parameters={"kid": "rs"}, private=True),
        "ES256": ECKey.generate_key("P-256", parameters={"kid": "es"}, private=True),
        "EdDSA": OKPKey.generate_key("Ed25519", parameters={"kid": "ed"}, private=True),
    }


def _token(alg: str, key: RSAKey | ECKey | OKPKey, n: int) -> str:
    now = int(time.time())
    claims = {
        "iss": ISSUER, "aud": AUDIENCE, "sub": f"user-{n}", "tenant": "acme",
        "roles": ["customer"], "scope": "orders:read", "iat": now, "nbf": now, "exp": now + 600,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SecurityWarning)
        return jwt.encode({"alg": alg, "kid": key.kid}, claims, key, algorithms=[alg])


async def auth(args: argparse.Namespace) -> dict[str, Any]:
    iterations = max(1, int(getattr(args, "iterations", 200)))
    keys = _keys()
    with tempfile.TemporaryDirectory(prefix="vocero-bench-auth-") as folder:
        jwks = Path(folder) / "jwks.json"
        jwks.write_text(json.dumps(KeySet(list(keys.values())).as_dict(private=False)))
        source = KeySource(str(jwks))
        verifier = CallerJwtVerifier(
            CallerJwtSettings(jwks=str(jwks), issuer=ISSUER, audience=AUDIENCE), source
        )
        tokens = {alg: [_token(alg, key, n) for n in range(iterations)]
                  for alg, key in keys.items()}  # fmt: skip
        for alg in keys:  # the first connect reads the JWKS; the rest use the kept set
            await verifier.verify(tokens[alg][0])
        fetches_before = source.fetches
        samples: dict[str, list[float]] = {alg: [] for alg in keys}
        for n in range(iterations):
            for alg in keys:
                started = time.perf_counter()
                await verifier.verify(tokens[alg][n])
                samples[alg].append(time.perf_counter() - started)
        directory = IdentityDirectory(
            [Caller(token=Secret(f"plain-token-{n}"), subject=f"u{n}", tenant="acme")
             for n in range(100)]
        )
        baseline: list[float] = []
        for n in range(iterations):
            started = time.perf_counter()
            directory.authenticate(f"plain-token-{n % 100}")
            baseline.append(time.perf_counter() - started)
    per_alg = {alg: percentiles(values, scale=1000) for alg, values in samples.items()}
    worst_p95 = max(summary["p95"] for summary in per_alg.values())
    return {
        "benchmark": "auth",
        "iterations": iterations,
        "jwks_cached": source.fetches == fetches_before,
        "verify_ms": per_alg,
        "identities_file_ms": percentiles(baseline, scale=1000),
        "worst_p95_ms": worst_p95,
        "goal_p95_ms": GOAL_P95_MS,
        "goal_met": worst_p95 <= GOAL_P95_MS,
    }
