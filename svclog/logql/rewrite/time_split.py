"""Splitting a query's time range into interval-aligned pieces.

Log queries split [start, end) at multiples of the interval (like the reference's
`split_queries_by_interval`); each piece keeps the full limit. Metric range queries
split their step-aligned evaluation times into contiguous groups, one per interval;
each piece evaluates only its own steps and reads its own lookback window.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

import numpy as np

from svclog.logql import ast
from svclog.logql.engine.params import QueryParams, step_times
from svclog.logql.rewrite.subquery import SubQuery


def log_pieces(params: QueryParams, interval_ns: int) -> list[QueryParams]:
    """[start, end) cut at multiples of `interval_ns`, oldest first; the params unchanged when
    splitting would alter the answer (`interval` thinning is sequential over the whole range)."""
    if interval_ns <= 0 or params.instant or params.interval or params.end <= params.start:
        return [params]
    pieces = []
    lo = params.start
    while lo < params.end:
        hi = min((lo // interval_ns + 1) * interval_ns, params.end)
        pieces.append(replace(params, start=lo, end=hi))
        lo = hi
    return pieces


def step_pieces(params: QueryParams, interval_ns: int) -> list[QueryParams]:
    """The evaluation times grouped by `t // interval_ns`, each group as range params
    whose own step grid is exactly that group. Expects validated params."""
    if interval_ns <= 0 or params.instant:
        return [params]
    steps = step_times(params)
    buckets = steps // interval_ns
    cuts = [0, *(np.flatnonzero(np.diff(buckets)) + 1).tolist(), len(steps)]
    if len(cuts) == 2:
        return [params]
    return [replace(params, start=int(steps[a]), end=int(steps[b - 1])) for a, b in pairwise(cuts)]


def time_pieces(expr: ast.Expr, params: QueryParams, interval_ns: int) -> list[QueryParams]:
    if isinstance(expr, ast.LogQuery):
        return log_pieces(params, interval_ns)
    return step_pieces(params, interval_ns)


def split_by_time(expr: ast.Expr, params: QueryParams, interval_ns: int) -> list[SubQuery]:
    """Un-sharded sub-queries, one per time piece (see `plan_query` for merging them)."""
    return [SubQuery(expr, piece) for piece in time_pieces(expr, params, interval_ns)]
