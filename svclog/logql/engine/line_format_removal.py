"""remove_line_format: the reference engine's removal of line_format stages a metric cannot observe.

Before it runs a metric query the reference drops, from the pipeline of every range aggregation
other than bytes_over_time/bytes_rate, each line_format that no later parser (json, logfmt,
regexp, pattern, unpack) or line filter reads the line of. Such a stage never builds (a malformed
template is no error) and never runs (no TemplateFormatErr, and a later label_format's
`__line__` reads the original line).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

from svclog.logql import ast

_LINE_BYTES_OPS = frozenset({"bytes_over_time", "bytes_rate"})
_LINE_READERS = (
    ast.JsonParser,
    ast.LogfmtParser,
    ast.RegexpParser,
    ast.PatternParser,
    ast.UnpackParser,
    ast.LineFilter,
)


def remove_line_format(expr: ast.Expr) -> ast.Expr:
    """`expr` with the unobservable line_format stages of its range aggregations removed."""
    return cast(ast.Expr, _rewrite(expr))


def kept_stages(stages: tuple[ast.Stage, ...]) -> tuple[ast.Stage, ...]:
    """`stages` without each line_format that no later stage reads the line of."""
    kept = tuple(
        stage
        for i, stage in enumerate(stages)
        if not isinstance(stage, ast.LineFormat) or any(isinstance(s, _LINE_READERS) for s in stages[i + 1 :])
    )
    return stages if len(kept) == len(stages) else kept


def _rewrite(node: Any) -> Any:
    if isinstance(node, ast.RangeAggregation):
        if node.op in _LINE_BYTES_OPS:
            return node
        stages = kept_stages(node.range.query.stages)
        if stages is node.range.query.stages:
            return node
        return replace(node, range=replace(node.range, query=replace(node.range.query, stages=stages)))
    if isinstance(node, tuple):
        items = tuple(_rewrite(item) for item in node)
        return node if all(a is b for a, b in zip(items, node)) else items
    if not hasattr(node, "__dataclass_fields__") or isinstance(node, type):
        return node
    changes = {}
    for name in node.__dataclass_fields__:
        value = getattr(node, name)
        new = _rewrite(value)
        if new is not value:
            changes[name] = new
    return replace(node, **changes) if changes else node
