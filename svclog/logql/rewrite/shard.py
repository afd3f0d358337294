"""Sharding by stream fingerprint: Expr -> merge tree with `Downstream` leaves.

`shard_expr` rewrites a metric expression into a tree the frontend evaluates
after the queriers return: every `Downstream` leaf is an ordinary expression run
once per shard (or once, un-sharded), and its partial results are combined by
label set with the leaf's `Combine`. Nodes above the leaves (binary operators,
label_replace, topk over merged series, sort, literals) run in the frontend.

What shards (each shard sees whole streams, never part of one):
- a range aggregation without `by`/`without` whose pipeline cannot change stream
  labels gives every stream its own series: shard results are disjoint (CONCAT);
- additive range aggregations (count/bytes/sum_over_time, rate, bytes_rate) add up
  across shards even when series collide (SUM); max/min_over_time take MAX/MIN;
- sum over CONCAT or SUM, count over CONCAT, max over CONCAT or MAX, min likewise;
- avg by (g) over CONCAT as sum by (g) / count by (g); topk/bottomk over CONCAT run
  per shard and again over the union; an avg_over_time the engine splits into
  sum_over_time / count_over_time (engine/avg_split.py) shards as its parts.
Everything else runs un-sharded, as small a subtree as possible. The split is
decided on the whole query: a plan whose leaf, run alone, would split an average
the whole query does not, runs as one un-sharded leaf.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Any, cast

from svclog.logql import ast
from svclog.logql.engine.avg_split import split_avg_over_time
from svclog.logql.engine.frontend_merge import frontend_mergers, merged_aggregations
from svclog.logql.engine.vector_agg import REDUCERS


class Combine(enum.Enum):
    """How the partial results of one leaf combine into one answer."""

    UNSHARDED = "unsharded"  # one partial per time piece; nothing to combine
    CONCAT = "concat"  # shards return disjoint series
    SUM = "sum"
    MAX = "max"
    MIN = "min"


@dataclass(frozen=True)
class Downstream:
    """A leaf of the merge tree: `expr` runs on queriers, per shard unless UNSHARDED."""

    expr: ast.Expr
    combine: Combine


# Stages that may rename, drop or overwrite stream labels, making two streams one series.
LABEL_MODIFIERS = (ast.Drop, ast.Keep, ast.LabelFormat, ast.RegexpParser)
ADDITIVE_RANGE_OPS = frozenset({"count_over_time", "rate", "bytes_over_time", "bytes_rate", "sum_over_time"})
REDUCING_RANGE_OPS = {"max_over_time": Combine.MAX, "min_over_time": Combine.MIN}
SORTS = frozenset({"sort", "sort_desc"})
SELECTORS = frozenset({"topk", "bottomk", "approx_topk"})


@dataclass(frozen=True)
class _Shardable:
    """An expression that can run per shard as a whole, combined with `combine`."""

    expr: ast.Expr
    combine: Combine


@dataclass(frozen=True)
class _Tree:
    """A merge tree (frontend nodes over Downstream leaves), or a pure expression."""

    node: object


def shard_expr(expr: ast.Expr, shards: int) -> object:
    """The merge tree of a metric expression; with shards <= 1 every leaf is UNSHARDED."""
    expr = split_avg_over_time(expr)
    tree = _as_node(_analyse(expr, shards > 1))
    if any(split_avg_over_time(leaf.expr) is not leaf.expr for leaf in leaves(tree)):
        return Downstream(expr, Combine.UNSHARDED)
    if not _same_mergers(expr, leaves(tree)) or _shares_label_sets(tree):
        return Downstream(expr, Combine.UNSHARDED)
    return tree


def _same_mergers(expr: ast.Expr, parts: list[Downstream]) -> bool:
    """Whether every leaf, run alone, merges the range aggregations it holds as the whole query
    does (engine/frontend_merge.py): the merge drops empty-valued labels."""
    whole = frontend_mergers(expr)
    whole_merged = merged_aggregations(expr)
    in_whole = {id(node) for node in ast.walk(expr)}
    for leaf in parts:
        held = {id(node) for node in ast.walk(leaf.expr) if isinstance(node, ast.RangeAggregation)}
        if set(frontend_mergers(leaf.expr)) != held & set(whole):
            return False
        # an average's sum and count parts are new nodes: whole and leaf alike merge them
        held = {id(node) for node in ast.walk(leaf.expr) if isinstance(node, ast.VectorAggregation)} & in_whole
        if merged_aggregations(leaf.expr) & held != whole_merged & held:
            return False
    return True


def _shares_label_sets(tree: object) -> bool:
    """Whether the plan would combine rows that share a label set (engine/answer.py) as one: a
    sharded leaf whose answer may hold such rows (its shards' rows would add up by label set,
    where the reference keeps every shard's series apart until its frontend's `without` merge),
    or a `without` aggregation the frontend evaluates (which keeps or merges them depending on
    the whole query, frontend_merge.merged_aggregations)."""
    for leaf in leaves(tree):
        if leaf.combine is not Combine.UNSHARDED and _may_share(leaf.expr):
            return True
    return any(isinstance(node, ast.VectorAggregation) and _reduces_without(node) for node in _frontend_nodes(tree))


def _may_share(expr: ast.Expr) -> bool:
    root: object = expr
    while isinstance(root, ast.VectorAggregation) and root.op in SELECTORS:
        root = root.expr
    if isinstance(root, ast.RangeAggregation):
        return id(root) in frontend_mergers(expr)
    return (
        isinstance(root, ast.VectorAggregation) and _reduces_without(root) and id(root) not in merged_aggregations(expr)
    )


def _reduces_without(node: ast.VectorAggregation) -> bool:
    return node.op in REDUCERS and node.grouping is not None and node.grouping.without


def _frontend_nodes(node: object) -> list[object]:
    """The nodes of a merge tree above its leaves."""
    if isinstance(node, Downstream):
        return []
    found = [node]
    for name in ("expr", "lhs", "rhs"):
        child = getattr(node, name, None)
        if isinstance(child, (ast.VectorAggregation, ast.BinaryOp, ast.LabelReplace, Downstream)):
            found.extend(_frontend_nodes(child))
    return found


def leaves(tree: object) -> list[Downstream]:
    """The distinct Downstream leaves of a merge tree, in first-seen order."""
    return list(dict.fromkeys(n for n in ast.walk(tree) if isinstance(n, Downstream)))


def _in_tree(leaf: Downstream) -> ast.SampleExpr:
    """A leaf stands in the frontend's tree where the sub-expression it evaluates stood; the AST's
    field types do not name this node, which only the frontend's evaluator reads."""
    return cast(ast.SampleExpr, leaf)


def _as_node(analysed: _Shardable | _Tree) -> object:
    if isinstance(analysed, _Shardable):
        return Downstream(analysed.expr, analysed.combine)
    return analysed.node


def is_pure(expr: object) -> bool:
    """Reads no logs: literals, vector(x) and operators over them; the frontend evaluates it."""
    return not any(isinstance(n, (ast.LogRange, Downstream)) for n in ast.walk(expr))


def _has_sort(expr: object) -> bool:
    return any(isinstance(n, ast.VectorAggregation) and n.op in SORTS for n in ast.walk(expr))


def _has_sharded_leaf(node: object) -> bool:
    return any(isinstance(n, Downstream) and n.combine is not Combine.UNSHARDED for n in ast.walk(node))


def _analyse(expr: ast.Expr, sharding: bool) -> _Shardable | _Tree:
    if is_pure(expr):
        return _Tree(expr)
    if isinstance(expr, ast.RangeAggregation):
        return _range(expr, sharding)
    if isinstance(expr, ast.VectorAggregation):
        return _vector(expr, sharding)
    if isinstance(expr, ast.BinaryOp):
        return _frontend_node(expr, ("lhs", "rhs"), sharding)
    if isinstance(expr, ast.LabelReplace):
        return _frontend_node(expr, ("expr",), sharding)
    return _Tree(Downstream(expr, Combine.UNSHARDED))


def range_combine(node: ast.RangeAggregation) -> Combine | None:
    """How per-shard results of a range aggregation combine, None when they do not."""
    if node.op == "absent_over_time":
        return None
    keeps_streams_apart = (
        node.grouping is None
        and node.range.unwrap is None
        and not any(isinstance(stage, LABEL_MODIFIERS) for stage in node.range.query.stages)
    )
    if keeps_streams_apart:
        return Combine.CONCAT
    if node.op in ADDITIVE_RANGE_OPS:
        return Combine.SUM
    return REDUCING_RANGE_OPS.get(node.op)


def _range(node: ast.RangeAggregation, sharding: bool) -> _Shardable | _Tree:
    combine = range_combine(node) if sharding else None
    if combine is None:
        return _Tree(Downstream(node, Combine.UNSHARDED))
    return _Shardable(node, combine)


# vector aggregation op -> the child combines it accepts, and how its own shards combine
_REAGGREGATE: dict[str, tuple[frozenset[Combine], Combine]] = {
    "sum": (frozenset({Combine.CONCAT, Combine.SUM}), Combine.SUM),
    "count": (frozenset({Combine.CONCAT}), Combine.SUM),
    "max": (frozenset({Combine.CONCAT, Combine.MAX}), Combine.MAX),
    "min": (frozenset({Combine.CONCAT, Combine.MIN}), Combine.MIN),
}


def _vector(node: ast.VectorAggregation, sharding: bool) -> _Shardable | _Tree:
    if node.op in SORTS:
        return _frontend_node(node, ("expr",), sharding)
    inner = _analyse(node.expr, sharding)
    if isinstance(inner, _Tree):
        return _frontend_node(node, ("expr",), sharding, analysed={"expr": inner})
    if node.op in _REAGGREGATE:
        accepted, combine = _REAGGREGATE[node.op]
        if inner.combine in accepted:
            return _Shardable(node, combine)
    if inner.combine is Combine.CONCAT:
        if node.op == "avg":
            sums = _in_tree(Downstream(replace(node, op="sum"), Combine.SUM))
            counts = _in_tree(Downstream(replace(node, op="count"), Combine.SUM))
            return _Tree(ast.BinaryOp("/", sums, counts))
        if node.op in SELECTORS:
            # each shard's top k contains every series of the overall top k it holds
            return _Tree(replace(node, expr=_in_tree(Downstream(node, Combine.CONCAT))))
        # stddev, stdvar, ... over per-stream series: the whole aggregation runs un-sharded
        return _Tree(Downstream(node, Combine.UNSHARDED))
    # an aggregation over series already merged in the frontend
    return _Tree(replace(node, expr=_in_tree(Downstream(inner.expr, inner.combine))))


def _frontend_node(
    node: ast.Expr, names: tuple[str, ...], sharding: bool, analysed: dict[str, _Shardable | _Tree] | None = None
) -> _Tree:
    """`node` evaluated in the frontend over its (sharded) children; collapsed into one
    un-sharded leaf when no child shards, unless it sorts (a leaf's partial loses its order)."""
    children = {name: (analysed or {}).get(name) or _analyse(getattr(node, name), sharding) for name in names}
    rebuilt = replace(cast(Any, node), **{name: _as_node(child) for name, child in children.items()})
    if not _has_sharded_leaf(rebuilt) and not _has_sort(node):
        return _Tree(Downstream(node, Combine.UNSHARDED))
    return _Tree(rebuilt)
