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
