"""split_avg_over_time: the reference query frontend's rewrite of `avg_over_time` into a division.

The reference's shard mapper walks a query from the top and turns some unwrapped
`avg_over_time(... [r]) by (g)` into

    sum by (g) (sum_over_time(... [r])) / sum by (g) (count_over_time(<range without unwrap> [r]))

so entries lacking the unwrapped label (or with a value that does not convert and is filtered
after unwrap) count in the denominator. Answers depend on which nodes it rewrites:

- only a node the mapper reaches: a subtree it sends to the queriers whole (a shardable `sum`,
  `avg` or `count`, a `max`/`min` over an aggregation keeping its labels) runs unchanged;
- only when the node may merge series: a grouping other than `without ()`, or labels reduced by
  `by`/`without (x)`, `drop`, `keep` or a `label_format` rename (no grouping counts as `without ()`,
  and a `without` denominator leaves the unwrapped label out too, as the extractor does).

The rewrite is idempotent: a rewritten node leaves no average for a second pass to find.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace
from typing import Any, cast

from svclog.logql import ast

SHARDABLE_RANGE_OPS = frozenset(
    {
        "avg_over_time",
        "count_over_time",
        "first_over_time",
        "last_over_time",
        "rate",
        "bytes_over_time",
        "bytes_rate",
        "sum_over_time",
        "max_over_time",
        "min_over_time",
        "quantile_over_time",
    }
)
SHARDABLE_VECTOR_OPS = frozenset({"sum", "avg", "count", "max", "min", "approx_topk"})
SHARDABLE_BINARY_OPS = frozenset({"+", "*"})
_SENT_WHOLE = frozenset({"sum", "avg", "count", "approx_topk"})
_NO_GROUPING = ast.Grouping(without=True, labels=())


def split_avg_over_time(expr: ast.Expr) -> ast.Expr:
    """`expr` with every average the reference's frontend rewrites replaced by its division."""
    splits = {id(node): _division(node) for node, top in reached_range_aggregations(expr) if _splits(node, top)}
    return _replace(expr, splits) if splits else expr


def reached_range_aggregations(expr: object) -> list[tuple[ast.RangeAggregation, bool]]:
    """The range aggregations the reference's shard mapper maps itself, each with its topLevel
    flag; any other runs inside a subtree the mapper sends to a querier whole."""
    found: list[tuple[ast.RangeAggregation, bool]] = []
    _visit(expr, True, found)
    return found


def _visit(node: object, top: bool, found: list[tuple[ast.RangeAggregation, bool]]) -> None:
    """`node` is reached by the mapper (`top`: the reference's topLevel flag)."""
    if isinstance(node, ast.RangeAggregation):
        found.append((node, top))
    elif isinstance(node, ast.VectorAggregation):
        if not shardable(node, top):
            _visit(node.expr, False, found)
        elif node.op in ("max", "min") and reduces_labels(node.expr):
            _visit(node.expr, False, found)
        # any other shardable aggregation runs on the queriers as it is
    elif isinstance(node, ast.BinaryOp):
        _visit(node.lhs, top, found)
        _visit(node.rhs, top, found)
    elif isinstance(node, ast.LabelReplace):
        _visit(node.expr, top, found)


def _splits(node: ast.RangeAggregation, top: bool) -> bool:
    if node.op != "avg_over_time" or node.range.unwrap is None or not shardable(node, top):
        return False
    grouping = node.grouping
    return reduces_labels(node) or (grouping is not None and (grouping.labels != () or not grouping.without))


def _division(node: ast.RangeAggregation) -> ast.BinaryOp:
    grouping = node.grouping or _NO_GROUPING
    unwrap = node.range.unwrap
    assert unwrap is not None
    sums = ast.VectorAggregation("sum", ast.RangeAggregation("sum_over_time", node.range), grouping)
    counted = replace(node.range, unwrap=None)
    count_grouping = replace(grouping, labels=(*grouping.labels, unwrap.label)) if grouping.without else grouping
    counts = ast.VectorAggregation("sum", ast.RangeAggregation("count_over_time", counted), count_grouping)
    return ast.BinaryOp("/", sums, counts)


def shardable(node: object, top: bool) -> bool:
    if isinstance(node, (ast.Literal,)):
        return True
    if isinstance(node, ast.RangeAggregation):
        if node.op == "quantile_over_time" and not top:
            return False
        return node.op in SHARDABLE_RANGE_OPS
    if isinstance(node, ast.VectorAggregation):
        if node.op not in SHARDABLE_VECTOR_OPS or not shardable(node.expr, top):
            return False
        if node.op in ("count", "avg"):
            return not reduces_labels(node.expr)
        if node.op in ("max", "min"):
            return isinstance(node.expr, ast.RangeAggregation) and shardable(node.expr, False)
        if node.op == "sum":
            return not (isinstance(node.expr, ast.VectorAggregation) and node.expr.op in ("max", "min"))
        return True
    if isinstance(node, ast.BinaryOp):
        matching = node.matching
        if matching is not None and (matching.on or matching.labels):
            return False
        return node.op in SHARDABLE_BINARY_OPS and shardable(node.lhs, top) and shardable(node.rhs, top)
    return False  # label_replace, vector(), anything else


def reduces_labels(node: object) -> bool:
    for part in ast.walk(node):
        if isinstance(part, (ast.RangeAggregation, ast.VectorAggregation)):
            if part.grouping is not None and part.grouping.labels:
                return True
        elif isinstance(part, (ast.Drop, ast.Keep)):
            return True
        elif isinstance(part, ast.LabelFormat) and any(not op.is_template for op in part.ops):
            return True
    return False


def _replace(node: Any, splits: dict[int, ast.BinaryOp]) -> Any:
    """`node` with the nodes named in `splits` (by id) replaced; untouched subtrees are kept."""
    if id(node) in splits:
        return splits[id(node)]
    if isinstance(node, tuple):
        items = tuple(_replace(item, splits) for item in node)
        return node if all(a is b for a, b in zip(items, node)) else items
    if not is_dataclass(node) or isinstance(node, type):
        return node
    changes = {}
    for f in fields(node):
        value = getattr(node, f.name)
        new = _replace(value, splits)
        if new is not value:
            changes[f.name] = new
    return replace(cast(Any, node), **changes) if changes else node
