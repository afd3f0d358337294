"""Vector aggregations: sum, avg, min, max, count, stddev, stdvar, topk, bottomk, sort, ...

Each group is reduced over its rows for all steps at once; absent samples are
masked out.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from svclog.logql import ast
from svclog.logql.engine.grouping import group_rows
from svclog.logql.engine.series import SeriesSet
from svclog.model import ValidationError

Reducer = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def _sum(v: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.where(p, v, 0.0).sum(axis=0), np.any(p, axis=0)


def _count(v: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return p.sum(axis=0).astype(np.float64), np.any(p, axis=0)


def _avg(v: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    total, present = _sum(v, p)
    with np.errstate(invalid="ignore", divide="ignore"):
        return total / p.sum(axis=0), present


def _min(v: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.fmin.reduce(np.where(p, v, np.nan), axis=0), np.any(p, axis=0)


def _max(v: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.fmax.reduce(np.where(p, v, np.nan), axis=0), np.any(p, axis=0)


def _stdvar(v: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = p.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(p, v, 0.0).sum(axis=0) / n
        var = np.where(p, (v - mean) ** 2, 0.0).sum(axis=0) / n
    return var, np.any(p, axis=0)


def _stddev(v: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    var, present = _stdvar(v, p)
    return np.sqrt(var), present


REDUCERS: dict[str, Reducer] = {
    "sum": _sum,
    "count": _count,
    "avg": _avg,
    "min": _min,
    "max": _max,
    "stdvar": _stdvar,
    "stddev": _stddev,
}
SELECTORS = {"topk": True, "approx_topk": True, "bottomk": False}


def aggregate(node: ast.VectorAggregation, inner: SeriesSet, merged: bool = False) -> SeriesSet:
    """`merged`: the reference's frontend re-aggregates this one over its shards' results
    (frontend_merge.merged_aggregations), which makes one of `without` groups that differ only
    in an empty-valued label; elsewhere they answer apart under one label set."""
    if node.op in REDUCERS:
        return _reduce(REDUCERS[node.op], node.grouping, inner, merged)
    if node.op in SELECTORS:
        return _select_k(node, inner, largest=SELECTORS[node.op])
    if node.op in ("sort", "sort_desc"):
        return SeriesSet(inner.labels, inner.values, inner.present, "asc" if node.op == "sort" else "desc")
    raise ValidationError(f"unsupported vector aggregation {node.op!r}")


def _reduce(reducer: Reducer, grouping: ast.Grouping | None, inner: SeriesSet, merged: bool) -> SeriesSet:
    groups = group_rows(inner.labels, grouping, merge_empty=merged)
    n_steps = inner.n_steps
    values = np.zeros((len(groups), n_steps))
    present = np.zeros((len(groups), n_steps), dtype=bool)
    for g, (_, rows) in enumerate(groups):
        values[g], present[g] = reducer(inner.values[rows], inner.present[rows])
    return SeriesSet([key for key, _ in groups], values, present).compact()


def _select_k(node: ast.VectorAggregation, inner: SeriesSet, largest: bool) -> SeriesSet:
    if node.param is None:
        raise ValidationError(f"{node.op} requires a parameter k")
    k = int(node.param)
    keep = np.zeros_like(inner.present)
    if k >= 1:
        for _, rows in group_rows(inner.labels, node.grouping):
            v, p = inner.values[rows], inner.present[rows]
            # absent samples sort last; NaN sorts after every number, as in the reference
            key = np.where(p & ~np.isnan(v), -v if largest else v, np.inf)
            key = np.where(p & np.isnan(v), np.finfo(np.float64).max, key)
            order = np.argsort(key, axis=0, kind="stable")
            ranks = np.empty_like(order)
            np.put_along_axis(ranks, order, np.arange(len(rows))[:, None].repeat(v.shape[1], axis=1), axis=0)
            keep[rows] = (ranks < k) & p
    return SeriesSet(inner.labels, inner.values, keep).compact()
