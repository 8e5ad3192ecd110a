"""The browser client (``/``) and the operator console (``/console``): static files only, served
by the composition root (docs/operators.md, docs/protocol.md). No Python module here imports a
plane; the files ship as package data."""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).parent / "static"
"""The browser client's files; the console's are under ``operator/``."""

CONSOLE = STATIC / "operator"
