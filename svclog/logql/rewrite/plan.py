"""plan_query: a query as sub-queries (time pieces x shards) and the merge that
turns their partial results into exactly the un-split answer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from svclog.logql import ast
from svclog.logql.engine.answer import shape_answer
from svclog.logql.engine.evaluator import DEFAULT_MAX_SERIES
from svclog.logql.engine.params import QueryParams, step_times, validate
from svclog.logql.engine.result import QueryResult, StreamsResult
from svclog.logql.rewrite.merge_logs import merge_streams
from svclog.logql.rewrite.merge_samples import combine, eval_tree, to_rows
from svclog.logql.rewrite.shard import Combine, Downstream, leaves, shard_expr
from svclog.logql.rewrite.subquery import SubQuery
from svclog.logql.rewrite.time_split import log_pieces, step_pieces
from svclog.model import ValidationError

Merger = Callable[[Sequence[QueryResult]], QueryResult]


@dataclass(frozen=True)
class Plan:
    """Run every sub-query (in any order, anywhere), then `merge` their results in
    the order of `subqueries`."""

    subqueries: tuple[SubQuery, ...]
    merger: Merger

    def merge(self, partials: Sequence[QueryResult]) -> QueryResult:
        if len(partials) != len(self.subqueries):
            raise ValueError(f"expected {len(self.subqueries)} partial results, got {len(partials)}")
        return self.merger(partials)


def plan_query(
    expr: ast.Expr,
    params: QueryParams,
    *,
    split_interval_ns: int = 0,
    shards: int = 1,
    max_series: int = DEFAULT_MAX_SERIES,
) -> Plan:
    """Sub-queries of `expr` split at multiples of `split_interval_ns` (0: no split) and
    sharded `shards` ways where the expression allows it."""
    try:
        validate(params)
    except ValidationError:
        return _passthrough(expr, params)  # the querier reports the error
    if isinstance(expr, ast.LogQuery):
        return _plan_logs(expr, params, split_interval_ns, shards)
    return _plan_metric(expr, params, split_interval_ns, shards, max_series)


def shard(expr: ast.Expr, params: QueryParams, shards: int) -> list[SubQuery]:
    """The sub-queries of `expr` sharded `shards` ways (no time split)."""
    return list(plan_query(expr, params, shards=shards).subqueries)


def _passthrough(expr: ast.Expr, params: QueryParams) -> Plan:
    return Plan((SubQuery(expr, params),), lambda partials: partials[0])


def _shard_slots(shards: int) -> list[tuple[int, int] | None]:
    return [(i, shards) for i in range(shards)] if shards > 1 else [None]


def _plan_logs(expr: ast.LogQuery, params: QueryParams, interval_ns: int, shards: int) -> Plan:
    if params.instant or params.interval:
        # instant log queries are an error; `interval` thins entries across all streams in sequence
        return _passthrough(expr, params)
    pieces = log_pieces(params, interval_ns)
    if params.direction == "backward":
        pieces = pieces[::-1]  # newest first: the pieces a client wants first
    subs = tuple(SubQuery(expr, piece, slot) for piece in pieces for slot in _shard_slots(shards))
    if len(subs) == 1:
        return Plan(subs, lambda partials: partials[0])

    def merge(partials: Sequence[QueryResult]) -> QueryResult:
        return merge_streams([_streams(p) for p in partials], params)

    return Plan(subs, merge)


def _streams(result: QueryResult) -> StreamsResult:
    if not isinstance(result, StreamsResult):
        raise TypeError(f"a log partial must be streams, not {type(result).__name__}")
    return result


def _plan_metric(expr: ast.Expr, params: QueryParams, interval_ns: int, shards: int, max_series: int) -> Plan:
    tree = shard_expr(expr, shards)
    pieces = step_pieces(params, interval_ns)
    keys: list[Downstream] = []
    subs: list[SubQuery] = []
    for leaf in leaves(tree):
        slots = [None] if leaf.combine is Combine.UNSHARDED else _shard_slots(shards)
        for slot in slots:
            for piece in pieces:
                keys.append(leaf)
                subs.append(SubQuery(leaf.expr, piece, slot))
    steps = step_times(params)

    def merge(partials: Sequence[QueryResult]) -> QueryResult:
        by_leaf: dict[Downstream, list[Any]] = {}
        for leaf, partial in zip(keys, partials):
            by_leaf.setdefault(leaf, []).append(to_rows(partial, steps))
        merged = {leaf: combine(parts, leaf.combine, len(steps)) for leaf, parts in by_leaf.items()}
        return shape_answer(eval_tree(tree, merged, len(steps)), params.instant, steps, max_series)

    return Plan(tuple(subs), merge)
