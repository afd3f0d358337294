"""frontend_mergers: the range aggregations the reference's frontend merges with a `without`
vector aggregation, and with which operation.

The reference's shard mapper wraps a count_over_time, rate, bytes_over_time, bytes_rate,
sum_over_time, max_over_time or min_over_time it reaches (avg_split.reached_range_aggregations)
in `sum`/`max`/`min` with the range aggregation's own grouping, or `without ()` when it has none,
whenever that aggregation may merge series: it drops, keeps or renames labels (`drop`, `keep`, a
`label_format` rename), or has a grouping other than `without ()`. The wrapper changes no value,
but a `without` one rebuilds every series' labels with Prometheus' labels.Builder, which leaves
out empty-valued labels: `count_over_time({app="a"} | logfmt level | drop pod [5m])` answers
without the `level=""` that `count_over_time({app="a"} | logfmt level [5m])` keeps.
"""

from __future__ import annotations

from svclog.logql import ast
from svclog.logql.engine.avg_split import reached_range_aggregations, reduces_labels, shardable

MERGERS = {
    "count_over_time": "sum",
    "rate": "sum",
    "bytes_over_time": "sum",
    "bytes_rate": "sum",
    "sum_over_time": "sum",
    "max_over_time": "max",
    "min_over_time": "min",
}
_NO_GROUPING = ast.Grouping(without=True, labels=())


def frontend_mergers(expr: object) -> dict[int, ast.VectorAggregation]:
    """id(range aggregation) -> the `without` aggregation the reference's frontend applies to its
    results (its `expr` is the range aggregation itself); the `by` ones change nothing."""
    mergers: dict[int, ast.VectorAggregation] = {}
    for node, top in reached_range_aggregations(expr):
        op = MERGERS.get(node.op)
        if op is None or not shardable(node, top):
            continue
        grouping = node.grouping
        if not reduces_labels(node) and (grouping is None or (grouping.without and not grouping.labels)):
            continue
        grouping = grouping or _NO_GROUPING
        if grouping.without:
            mergers[id(node)] = ast.VectorAggregation(op, node, grouping)
    return mergers


def merged_aggregations(expr: object) -> frozenset[int]:
    """ids of the vector aggregations the reference's shard mapper shards: a reached sum, avg or
    count (over labels it does not reduce), or max/min over a range aggregation keeping its labels.
    Its frontend aggregates the shards' answers again by label set, so `without` groups that
    differ only in an empty-valued label (one name: labels.Builder leaves the value out) are one;
    every other `without` aggregation answers them apart, twice under one label set."""
    found: set[int] = set()
    _visit_aggregations(expr, True, found)
    return frozenset(found)


def _visit_aggregations(node: object, top: bool, found: set[int]) -> None:
    if isinstance(node, ast.VectorAggregation):
        if not shardable(node, top) or (node.op in ("max", "min") and reduces_labels(node.expr)):
            _visit_aggregations(node.expr, False, found)
        elif node.op in ("sum", "avg", "count", "max", "min"):
            found.add(id(node))
    elif isinstance(node, ast.BinaryOp):
        _visit_aggregations(node.lhs, top, found)
        _visit_aggregations(node.rhs, top, found)
    elif isinstance(node, ast.LabelReplace):
        _visit_aggregations(node.expr, top, found)
