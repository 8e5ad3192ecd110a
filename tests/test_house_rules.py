"""House rules of ``vocero/`` that a reviewer would otherwise have to count (ADR-0024): no class
does more than 20 things and no module runs past 500 lines. A file that must break one is listed
in ``JUSTIFIED`` with its reason, so an exception is a decision, not drift."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "vocero"
MAX_METHODS = 20
MAX_LINES = 500
JUSTIFIED: dict[str, str] = {}
"""``path under vocero/`` → why it may be longer, or a class in it larger (none today)."""


def _breaches(module: Path, package: Path = PACKAGE) -> list[str]:
    name = module.relative_to(package).as_posix()
    text = module.read_text(encoding="utf-8")
    found = []
    if text.count("\n") > MAX_LINES:
        found.append(f"{name}: {text.count(chr(10))} lines")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef):
            methods = sum(isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                          for f in node.body)
            if methods > MAX_METHODS:
                found.append(f"{name}: class {node.name} has {methods} methods")
    return found


def test_no_module_over_500_lines_and_no_class_over_20_methods() -> None:
    modules = [p for p in sorted(PACKAGE.rglob("*.py"))
               if p.relative_to(PACKAGE).as_posix() not in JUSTIFIED]
    assert len(modules) > 250  # the walk found the package
    assert [breach for module in modules for breach in _breaches(module)] == []


def test_the_rules_catch_a_breach(tmp_path: Path) -> None:
    methods = "".join(f"    def m{i}(self) -> None: ...\n" for i in range(MAX_METHODS + 1))
    probe = tmp_path / "probe.py"
    probe.write_text("x = 1\n" * MAX_LINES + "class Busy:\n" + methods, encoding="utf-8")
    assert _breaches(probe, tmp_path) == [
        f"probe.py: {MAX_LINES + 1 + MAX_METHODS + 1} lines",
        f"probe.py: class Busy has {MAX_METHODS + 1} methods",
    ]
