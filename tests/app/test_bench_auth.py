"""``vocero bench auth``: every algorithm is verified against a JWKS read once (the cached case)
and the report says whether the p95 goal holds."""

from __future__ import annotations

import argparse

import pytest

from vocero.bench.auth import auth

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_bench_verifies_each_algorithm_against_the_cached_jwks() -> None:
    report = await auth(argparse.Namespace(iterations=5))
    assert report["jwks_cached"] is True  # no read of the key set during the measured connects
    assert sorted(report["verify_ms"]) == ["ES256", "EdDSA", "RS256"]
    assert all(summary["n"] == 5 for summary in report["verify_ms"].values())
    assert report["goal_met"] == (report["worst_p95_ms"] <= report["goal_p95_ms"])
