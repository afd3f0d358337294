"""Unit tests of time splitting: interval-aligned log pieces and step groups."""

from __future__ import annotations

import numpy as np

from svclog.logql.engine.params import QueryParams, step_times
from svclog.logql.parser import parse
from svclog.logql.rewrite import plan_query, split_by_time
from svclog.logql.rewrite.time_split import log_pieces, step_pieces

H = 3600 * 10**9
M = 60 * 10**9


def test_log_pieces_cut_at_interval_multiples() -> None:
    params = QueryParams.for_range(H // 2, 3 * H + 5, limit=10)
    pieces = log_pieces(params, H)
    assert [(p.start, p.end) for p in pieces] == [(H // 2, H), (H, 2 * H), (2 * H, 3 * H), (3 * H, 3 * H + 5)]
    assert all(p.limit == 10 for p in pieces)


def test_log_queries_with_interval_are_not_split() -> None:
    params = QueryParams.for_range(0, 3 * H, interval=M)
    assert log_pieces(params, H) == [params]
    assert len(plan_query(parse('{app="a"}'), params, split_interval_ns=H, shards=4).subqueries) == 1


def test_backward_log_pieces_are_planned_newest_first() -> None:
    params = QueryParams.for_range(0, 3 * H)
    subs = plan_query(parse('{app="a"}'), params, split_interval_ns=H, shards=2).subqueries
    assert [(s.params.start, s.shard) for s in subs] == [
        (2 * H, (0, 2)),
        (2 * H, (1, 2)),
        (H, (0, 2)),
        (H, (1, 2)),
        (0, (0, 2)),
        (0, (1, 2)),
    ]


def test_step_pieces_partition_the_evaluation_times() -> None:
    params = QueryParams.for_range(7 * M + 3, 3 * H + 1, 7 * M)
    pieces = step_pieces(params, H)
    joined = np.concatenate([step_times(p) for p in pieces])
    assert joined.tolist() == step_times(params).tolist()
    assert len(pieces) == 4
    assert all(p.step == params.step for p in pieces)


def test_instant_queries_and_single_pieces_are_not_split() -> None:
    instant = QueryParams.for_instant(5 * H)
    assert step_pieces(instant, M) == [instant]
    short = QueryParams.for_range(H, H + 10 * M, M)
    assert step_pieces(short, H) == [short]
    assert split_by_time(parse('rate({app="a"}[1m])'), short, 0)[0].params == short


def test_invalid_params_pass_through_for_the_querier_to_reject() -> None:
    bad = QueryParams(0, H, 0)
    plan = plan_query(parse('rate({app="a"}[1m])'), bad, split_interval_ns=M, shards=4)
    assert [s.params for s in plan.subqueries] == [bad]
