"""The series a PromQL expression reads, found with a real parser (``promql-parser``)."""

from __future__ import annotations

from typing import Any

import promql_parser


def selectors(expression: str) -> list[tuple[str, dict[str, str]]]:
    """Every vector selector of ``expression``: metric name and its equality matchers."""
    found: list[tuple[str, dict[str, str]]] = []
    _walk(promql_parser.parse(expression), found)
    return found


def _walk(node: Any, found: list[tuple[str, dict[str, str]]]) -> None:
    if isinstance(node, promql_parser.VectorSelector):
        equal = {m.name: m.value for m in node.matchers.matchers
                 if str(m.op).endswith("Equal") and "Not" not in str(m.op)}
        found.append((node.name or equal.get("__name__", ""), equal))
    elif isinstance(node, promql_parser.MatrixSelector):
        _walk(node.vector_selector, found)
    elif isinstance(node, promql_parser.BinaryExpr):
        _walk(node.lhs, found)
        _walk(node.rhs, found)
    elif isinstance(node, promql_parser.Call):
        for argument in node.args:
            _walk(argument, found)
    elif isinstance(node, (promql_parser.AggregateExpr, promql_parser.ParenExpr,
                           promql_parser.UnaryExpr, promql_parser.SubqueryExpr)):
        _walk(node.expr, found)
