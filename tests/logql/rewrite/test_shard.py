"""Unit tests of the shard rewrite: which expressions shard, and how their partials combine."""

from __future__ import annotations

import pytest

from svclog.logql import ast
from svclog.logql.parser import parse
from svclog.logql.rewrite.shard import Combine, Downstream, leaves, shard_expr

UNWRAP = '{app="a"} | logfmt | unwrap latency'


def plan(text: str, shards: int = 4) -> object:
    return shard_expr(parse(text), shards)


def leaf_kinds(text: str, shards: int = 4) -> list[tuple[str, Combine]]:
    return [
        (type(leaf.expr).__name__ + ":" + getattr(leaf.expr, "op", ""), leaf.combine)
        for leaf in leaves(plan(text, shards))
    ]


@pytest.mark.parametrize(
    "text, combine",
    [
        ('sum by (x) (rate({app="a"}[1m]))', Combine.SUM),
        ('count(count_over_time({app="a"} | json [1m]))', Combine.SUM),
        ('max by (x) (bytes_over_time({app="a"}[1m]))', Combine.MAX),
        ('min(count_over_time({app="a"}[1m]))', Combine.MIN),
        ('rate({app="a"} |= "x" [1m])', Combine.CONCAT),
        (f"quantile_over_time(0.9, {UNWRAP} [1m])", None),  # unwrap drops a label: series may collide
        ('sum by (app) (count_over_time({app="a"} | drop pod [1m]))', Combine.SUM),
        # the reference's `without ()` merge of its shards may answer a label set twice
        ('count_over_time({app="a"} | drop pod [1m])', None),
        ('sum without (x) (count_over_time({app="a"} | drop pod [1m]))', Combine.SUM),
        ('stddev without (x) (count_over_time({app="a"} | drop pod [1m]))', None),
        (f"max_over_time({UNWRAP} [1m]) by (x)", Combine.MAX),
        (f"sum(sum_over_time({UNWRAP} [1m]))", Combine.SUM),
        ('sum(sum by (x, y) (rate({app="a"}[1m])))', Combine.SUM),
    ],
)
def test_whole_expression_runs_per_shard(text: str, combine: Combine | None) -> None:
    tree = plan(text)
    if combine is None:
        assert tree == Downstream(parse(text), Combine.UNSHARDED)
    else:
        assert tree == Downstream(parse(text), combine)


@pytest.mark.parametrize(
    "text",
    [
        f"quantile_over_time(0.9, {UNWRAP} [1m]) by (x)",
        'stddev(count_over_time({app="a"}[1m]))',
        'absent_over_time({app="a"}[1m])',
    ],
)
def test_unshardable_runs_once(text: str) -> None:
    assert plan(text) == Downstream(parse(text), Combine.UNSHARDED)


@pytest.mark.parametrize(
    "text, outer, inner",
    [
        # series collide across shards: count and max need them merged first
        ('count(sum by (app) (count_over_time({app="a"} | drop pod [1m])))', "count", Combine.SUM),
        ('max(sum by (app) (rate({app="a"} | keep app [1m])))', "max", Combine.SUM),
        ('label_replace(rate({app="a"}[1m]), "x", "y", "app", ".*")', "label_replace", Combine.CONCAT),
    ],
)
def test_frontend_aggregates_merged_partials(text: str, outer: str, inner: Combine) -> None:
    tree = plan(text)
    assert getattr(tree, "op", "label_replace") == outer
    assert isinstance(tree.expr, Downstream) and tree.expr.combine is inner


def test_one_shard_means_one_unsharded_leaf() -> None:
    text = 'sum by (x) (rate({app="a"}[1m])) / 2'
    assert plan(text, shards=1) == Downstream(parse(text), Combine.UNSHARDED)


def test_avg_is_sum_over_count() -> None:
    tree = plan('avg by (x) (rate({app="a"}[1m]))')
    assert isinstance(tree, ast.BinaryOp) and tree.op == "/"
    assert [(leaf.expr.op, leaf.combine) for leaf in leaves(tree)] == [("sum", Combine.SUM), ("count", Combine.SUM)]


def test_avg_over_time_by_shards_as_the_engine_computes_it() -> None:
    tree = plan(f"avg_over_time({UNWRAP} [1m]) by (x)")
    assert isinstance(tree, ast.BinaryOp) and tree.op == "/"
    ops = [leaf.expr.expr.op for leaf in leaves(tree)]
    assert ops == ["sum_over_time", "count_over_time"]


def test_avg_over_time_in_a_subtree_sent_whole_is_not_divided() -> None:
    # the reference's frontend sends a shardable sum to the queriers as it is
    assert leaf_kinds(f"sum(avg_over_time({UNWRAP} [1m]) by (x))") == [("VectorAggregation:sum", Combine.UNSHARDED)]
    # a leaf that would divide on its own what the whole query does not: one un-sharded leaf
    text = f'sum(avg_over_time({UNWRAP} [1m]) by (x) + rate({{app="a"}}[1m]))'
    assert plan(text) == Downstream(parse(text), Combine.UNSHARDED)


def test_topk_runs_per_shard_and_again_over_the_union() -> None:
    tree = plan('topk(3, rate({app="a"}[1m]))')
    assert isinstance(tree, ast.VectorAggregation) and tree.op == "topk"
    assert tree.expr == Downstream(parse('topk(3, rate({app="a"}[1m]))'), Combine.CONCAT)


def test_frontend_nodes_over_merged_children() -> None:
    tree = plan('topk(2, sum by (x) (rate({app="a"}[1m]))) + on(x) vector(1)')
    assert isinstance(tree, ast.BinaryOp)
    assert leaf_kinds('topk(2, sum by (x) (rate({app="a"}[1m])))') == [("VectorAggregation:sum", Combine.SUM)]
    # two different selectors: each side shards on its own
    assert len(leaves(plan('sum(rate({app="a"}[1m])) / sum(rate({app="b"}[1m]))'))) == 2
    # identical sub-expressions run once
    assert len(leaves(plan('sum(rate({app="a"}[1m])) / sum(rate({app="a"}[1m]))'))) == 1


def test_sort_stays_in_the_frontend_even_unsharded() -> None:
    tree = plan('sort_desc(quantile_over_time(0.5, {app="a"} | logfmt | unwrap x [1m]) by (y))', shards=1)
    assert isinstance(tree, ast.VectorAggregation) and tree.op == "sort_desc"
    assert isinstance(tree.expr, Downstream)


def test_pure_expressions_need_no_querier() -> None:
    assert leaves(plan("vector(1) + 2 * 3")) == []


@pytest.mark.parametrize(
    "text",
    [
        'avg by (x) (rate({app="a"}[1m]))',
        f"avg_over_time({UNWRAP} [1m]) by (x)",
        'topk by (x) (3, count_over_time({app="a"} |= "e" [5m] offset 1m))',
        'sum without (pod) (bytes_rate({app="a"} | json | drop y [1m]))',
    ],
)
def test_leaves_print_and_parse_back(text: str) -> None:
    """Sub-queries can travel as text: every leaf prints to a query that parses to it."""
    from svclog.logql.printer import print_expr

    for leaf in leaves(plan(text)):
        assert parse(print_expr(leaf.expr)) == leaf.expr
