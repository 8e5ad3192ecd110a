"""``vocero`` (the console script) and ``python -m vocero``.

Every command but one runs in the composition root (:mod:`vocero.app.cli`). ``vocero bench``
runs in :mod:`vocero.bench`, a layer above the composition root that nothing in the product
imports, so it is handed in here, at the top, rather than imported by the root.
"""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from vocero.app.cli import main as run
    from vocero.bench.command import bench_command

    return run(argv, commands={"bench": bench_command})


if __name__ == "__main__":
    raise SystemExit(main())
