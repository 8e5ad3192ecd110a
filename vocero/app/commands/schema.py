"""``vocero schema``: write or check the committed event schemas under ``docs/schemas``."""

from __future__ import annotations

import sys
from pathlib import Path

from vocero.app.settings import REPO_ROOT
from vocero.contracts.schema_export import event_schemas, render


def _target(out: str | None) -> Path:
    return Path(out) if out else REPO_ROOT / "docs" / "schemas"


def write_schemas(out: str | None = None) -> int:
    target = _target(out)
    target.mkdir(parents=True, exist_ok=True)
    wanted = {f"{name}.json": render(schema) for name, schema in event_schemas().items()}
    for stale in target.glob("*.json"):
        if stale.name not in wanted:
            stale.unlink()
    for name, text in wanted.items():
        (target / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(wanted)} schemas to {target}")
    return 0


def schema_drift(out: str | None = None) -> list[str]:
    """Names of schema files that are missing, stale or extra compared with the code."""
    target = _target(out)
    wanted = {f"{name}.json": render(schema) for name, schema in event_schemas().items()}
    present = {p.name: p.read_text(encoding="utf-8") for p in target.glob("*.json")}
    return sorted(
        [n for n, text in wanted.items() if present.get(n) != text]
        + [n for n in present if n not in wanted]
    )


def check_schemas(out: str | None = None) -> int:
    drift = schema_drift(out)
    for name in drift:
        print(f"schema out of date: {name}", file=sys.stderr)
    return 1 if drift else 0
