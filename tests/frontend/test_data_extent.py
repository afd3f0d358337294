"""Sub-queries that cannot find data are answered without being sent, and never change an answer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from svclog.frontend.data_extent import plan_window, read_window, skippable
from svclog.frontend.frontend import QueryFrontend
from svclog.logql.engine.json_codec import result_to_json
from svclog.logql.engine.memory_source import MemorySource
from svclog.logql.engine.params import QueryParams
from svclog.logql.parser import parse
from svclog.logql.rewrite.plan import plan_query
from svclog.logql.rewrite.subquery import SubQuery, evaluate_subquery
from svclog.model import merge_spans

S = 1_000_000_000
HOUR = 3600 * S
T0 = 1_700_000_000 * S // HOUR * HOUR  # an hour boundary


def test_read_window_reaches_back_by_range_and_offset() -> None:
    params = QueryParams(T0, T0 + HOUR, 60 * S)
    sub = SubQuery(parse('count_over_time({a="b"}[5m] offset 1h) / count_over_time({a="b"}[1m])'), params)
    assert read_window(sub) == (T0 - HOUR - 5 * 60 * S, T0 + HOUR)
    assert read_window(SubQuery(parse('{a="b"}'), params)) == (T0, T0 + HOUR)
    assert read_window(SubQuery(parse("vector(1)"), params)) is None
    instant = QueryParams(T0, T0, 0, instant=True)
    assert read_window(SubQuery(parse('count_over_time({a="b"}[5m])'), instant)) is None


def test_skippable_only_outside_every_span_and_with_a_known_extent() -> None:
    sub = SubQuery(parse('count_over_time({a="b"}[5m])'), QueryParams(T0, T0 + HOUR, 60 * S))
    assert not skippable(sub, None)  # extent unknown: keep
    assert skippable(sub, [])
    assert skippable(sub, [(T0 + 2 * HOUR, T0 + 3 * HOUR)])
    assert not skippable(sub, [(T0 + HOUR, T0 + 2 * HOUR)])  # touches the last step
    assert not skippable(sub, [(T0 - 5 * 60 * S, T0 - 5 * 60 * S)])  # the first step's window reaches it
    # queries that answer without data are answered here too (their empty answer is evaluated)
    for query in ('absent_over_time({a="b"}[5m])', 'count_over_time({a="b"}[5m]) or vector(0)'):
        assert skippable(SubQuery(parse(query), sub.params), [(T0 + 2 * HOUR, T0 + 3 * HOUR)])
    assert not skippable(SubQuery(parse("vector(0)"), sub.params), [])  # reads nothing: no window, sent


def test_merge_spans() -> None:
    assert merge_spans([(5, 9), (1, 3), (3, 4), (20, 30), (8, 12)]) == [(1, 4), (5, 12), (20, 30)]
    assert merge_spans([]) == []


def test_plan_window_is_none_when_nothing_can_be_skipped() -> None:
    params = QueryParams(T0, T0 + 3 * HOUR, 60 * S)
    one = plan_query(parse('count_over_time({a="b"}[5m])'), params)
    assert plan_window(one.subqueries) is None  # a single piece
    many = plan_query(parse('count_over_time({a="b"}[5m])'), params, split_interval_ns=HOUR)
    assert plan_window(many.subqueries) == (T0 - 5 * 60 * S, T0 + 3 * HOUR)
    absent = plan_query(parse('absent_over_time({a="b"}[5m])'), params, split_interval_ns=HOUR)
    assert plan_window(absent.subqueries) == (T0 - 5 * 60 * S, T0 + 3 * HOUR)
    literal = plan_query(parse("vector(1)"), params, split_interval_ns=HOUR)
    assert plan_window(literal.subqueries) is None  # nothing bounds what it reads


QUERIES = [
    '{app="x"}',
    '{app="x"} |= "b"',
    'count_over_time({app="x"}[5m])',
    'sum by (app) (count_over_time({app=~".+"}[10m]))',
    'rate({app="x"}[1h] offset 30m)',
    'bytes_over_time({app="y"}[2m])',
    'absent_over_time({app="x"}[5m])',
    'count_over_time({app="x"}[5m]) or vector(0)',
    'count_over_time({app="x"}[5m]) + vector(1)',
    'label_replace(sum(count_over_time({app="y"}[5m])), "k", "v", "", "")',
    "vector(3)",
    'max_over_time({app="x"} | logfmt | unwrap n [15m])',
    'topk(1, count_over_time({app=~"x|y"}[30m]))',
]


# with the data in a few minutes, a long range has hours these never send
SKIPPED_WHEN_LONG = (
    'count_over_time({app="x"}[5m])',
    'absent_over_time({app="x"}[5m])',
    'count_over_time({app="x"}[5m]) or vector(0)',
)


def _answers(query: str, params: QueryParams, source: MemorySource, shards: int, spans) -> tuple[dict, dict, int]:
    """The merged answer with every sub-query run, and with the skippable ones answered empty."""
    plan = plan_query(parse(query), params, split_interval_ns=HOUR, shards=shards)
    partials = [evaluate_subquery(sub, source) for sub in plan.subqueries]
    skipped = QueryFrontend.answered_without_data(plan, spans)
    pruned = [skipped[i].result if i in skipped else partials[i] for i in range(len(partials))]
    return result_to_json(plan.merge(partials)), result_to_json(plan.merge(pruned)), len(skipped)


@settings(max_examples=60, deadline=None)
@given(
    query=st.sampled_from(QUERIES),
    offsets=st.lists(st.integers(min_value=0, max_value=3 * 60), min_size=1, max_size=6),
    hour=st.integers(min_value=0, max_value=20),
    edge=st.sampled_from([0, 1, -1, 5 * 60 * S, 30 * 60 * S]),
    span_hours=st.integers(min_value=1, max_value=24),
    step=st.sampled_from([15 * S, 60 * S, 7 * 60 * S]),
    shards=st.sampled_from([1, 2]),
    backward=st.booleans(),
)
def test_skipping_never_changes_an_answer(query, offsets, hour, edge, span_hours, step, shards, backward) -> None:
    # entries in one or two short bursts, some on (or one ns beside) an hour boundary
    base = T0 + hour * HOUR + edge
    stamps = sorted({base + off * S for off in offsets} | {T0 + hour * HOUR - 1})
    x = [(ts, f"n={i} b") for i, ts in enumerate(stamps)]
    source = MemorySource.from_dicts([({"app": "x"}, x), ({"app": "y", "env": "e"}, x[::2])])
    spans = merge_spans((ts, ts) for ts in stamps)
    params = QueryParams(T0, T0 + span_hours * HOUR, step, limit=50, direction="backward" if backward else "forward")
    full, pruned, skipped = _answers(query, params, source, shards, spans)
    assert pruned == full
    if query in SKIPPED_WHEN_LONG and span_hours >= 12:
        assert skipped > 0  # the empty hours really are skipped


def test_a_long_range_over_one_busy_hour_sends_only_that_hour() -> None:
    stamps = [T0 + 20 * 24 * HOUR + 60 * S * i for i in range(10)]
    source = MemorySource.from_dicts([({"app": "x"}, [(ts, "line") for ts in stamps])])
    params = QueryParams(T0, T0 + 24 * 24 * HOUR, 60 * 60 * S)
    plan = plan_query(parse('count_over_time({app="x"}[5m])'), params, split_interval_ns=HOUR)
    full, pruned, skipped = _answers('count_over_time({app="x"}[5m])', params, source, 1, [(stamps[0], stamps[-1])])
    assert pruned == full
    assert len(plan.subqueries) - skipped <= 2
    assert full["result"]  # the answer does hold the busy hour


@pytest.mark.parametrize("query", ['absent_over_time({app="x"}[5m])', 'count_over_time({app="x"}[5m]) or vector(0)'])
def test_a_long_range_that_answers_without_data_is_evaluated_here(query) -> None:
    """24 days over one busy hour: every other hour is answered here over no entries, and fast."""
    import time

    stamps = [T0 + 20 * 24 * HOUR + 60 * S * i for i in range(10)]
    source = MemorySource.from_dicts([({"app": "x"}, [(ts, "line") for ts in stamps])])
    params = QueryParams(T0, T0 + 24 * 24 * HOUR, 5 * 60 * S)  # 6912 steps
    plan = plan_query(parse(query), params, split_interval_ns=HOUR)
    began = time.perf_counter()
    local = QueryFrontend.answered_without_data(plan, [(stamps[0], stamps[-1])])
    took = time.perf_counter() - began
    assert len(plan.subqueries) - len(local) <= 2
    full, pruned, _ = _answers(query, params, source, 1, [(stamps[0], stamps[-1])])
    assert pruned == full and full["result"]
    assert took < 5, took  # ~0.3 s on an idle core; the bound is loose for a loaded machine
