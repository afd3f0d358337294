"""Which sub-queries of a plan cannot find data, given the time spans a tenant holds data in.

A long range splits into hundreds of time pieces, and each one costs a scheduler round trip
and a select on every ingester even when its hour is empty. A piece whose read window lies
outside every span holding data is answered here instead: the sub-query evaluated over an
empty source, which is what a querier would answer. That holds for every query, including
those that answer without data (`absent_over_time`, `... or vector(0)`): their empty pieces
keep their output, evaluated here. Anything the window logic cannot bound is sent.
"""

from __future__ import annotations

from collections.abc import Sequence

from svclog.logql import ast
from svclog.logql.engine.memory_source import MemorySource
from svclog.logql.engine.result import QueryResult
from svclog.logql.rewrite.subquery import SubQuery, evaluate_subquery
from svclog.model import Span


def read_window(sub: SubQuery) -> Span | None:
    """[lo, hi] (inclusive) of the entry timestamps the sub-query can read; None when unbounded
    or unsure (instant queries, an expression shape not known here)."""
    params = sub.params
    if params.instant or params.end < params.start:
        return None
    if isinstance(sub.expr, ast.LogQuery):
        return params.start, params.end
    ranges = [node for node in ast.walk(sub.expr) if isinstance(node, ast.LogRange)]
    if not ranges:
        return None
    # a range aggregation at step t reads (t - offset - range, t - offset]
    lo = min(params.start - r.offset - r.range for r in ranges)
    hi = max(params.end - r.offset for r in ranges)
    return lo, hi


def plan_window(subqueries: Sequence[SubQuery]) -> Span | None:
    """The window all skippable sub-queries read together (None: none can be skipped), so the
    data spans are asked for within it only."""
    bounded = [w for w in map(read_window, subqueries) if w is not None]
    if len(bounded) < 2:  # one piece: nothing to gain
        return None
    return min(w[0] for w in bounded), max(w[1] for w in bounded)


def overlaps(window: Span, spans: Sequence[Span]) -> bool:
    lo, hi = window
    return any(s_lo <= hi and lo <= s_hi for s_lo, s_hi in spans)


def skippable(sub: SubQuery, spans: Sequence[Span] | None) -> bool:
    """Whether the sub-query can be answered without sending it: its read window misses every
    span holding data. `spans` None: the extent is unknown, nothing is skipped."""
    if spans is None:
        return False
    window = read_window(sub)
    return window is not None and not overlaps(window, spans)


def empty_answer(sub: SubQuery) -> QueryResult:
    """What a querier answers for the sub-query when its window holds no entries."""
    return evaluate_subquery(sub, MemorySource())


def prune(subqueries: Sequence[SubQuery], spans: Sequence[Span] | None) -> dict[int, QueryResult]:
    """index -> answer for every sub-query that need not be sent."""
    return {i: empty_answer(sub) for i, sub in enumerate(subqueries) if skippable(sub, spans)}
