"""``vocero bench audit``: the chain it builds verifies, and it reads every page of it."""

from __future__ import annotations

import argparse

import pytest

from vocero.bench.audit import PAGE, audit

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_bench_reads_a_verifiable_chain_page_by_page() -> None:
    report = await audit(argparse.Namespace(events=2 * PAGE + 7))
    assert report["events"] == 2 * PAGE + 7
    assert report["pages"] == 3 and report["page_ms"]["n"] == 3
    assert report["every_page_verified"] is True  # the bulk rows chain exactly as append does
