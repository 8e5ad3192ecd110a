"""The impaired network path of the tests: the package's proxy (:mod:`vocero.bench.netproxy`),
which ``vocero bench network`` measures through too, so the two share one implementation."""

from __future__ import annotations

from vocero.bench.netproxy import CHUNK_BYTES, QUEUE_CHUNKS, Direction, Impairment, Link, NetProxy

__all__ = ["CHUNK_BYTES", "QUEUE_CHUNKS", "Direction", "Impairment", "Link", "NetProxy"]
