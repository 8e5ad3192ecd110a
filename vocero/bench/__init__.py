"""Every benchmark of ``vocero bench NAME`` (JSON output, docs/slo.md), and the harness the
official MCP conformance suite drives.

This package sits above the composition root (``.importlinter``): it builds servers and
sessions the way ``serve`` does and measures them, and nothing in the product imports it. Every
figure is summarised by :mod:`vocero.bench.stats`, so all benchmarks compute percentiles the
same way.
"""
