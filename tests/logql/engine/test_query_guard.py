"""The engine never wedges: linear grouping however many streams a parser makes, `limit` bounds
the rows read, and a query stops at its deadline, on cancellation, past its memory budget or as
soon as it has too many series."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from svclog.logql import ast
from svclog.logql.engine import log_windows
from svclog.logql.engine.evaluator import evaluate
from svclog.logql.engine.guard import (
    QueryCancelled,
    QueryGuard,
    QueryLimits,
    QueryMemoryExceeded,
    QueryTimedOut,
    smallest_positive,
)
from svclog.logql.engine.memory_source import MemorySource
from svclog.logql.engine.params import SMALL_READ_BYTES, QueryParams
from svclog.logql.parser import parse
from svclog.model import NS, Labels, LimitError

HOUR = 3600 * NS


class CountingSource:
    """A MemorySource that counts the selects and the rows it hands out."""

    def __init__(self, inner: MemorySource):
        self.inner = inner
        self.selects = 0
        self.rows = 0
        self.blocks = 0

    def select_logs(self, request):
        self.selects += 1
        for block in self.inner.select_logs(request):
            self.rows += len(block)
            self.blocks += 1
            yield block

    def select_series(self, matchers, start, end):
        return self.inner.select_series(matchers, start, end)


def spread(streams: int, per_stream: int, span: int = HOUR) -> MemorySource:
    """`streams` streams whose entries are evenly spread over [0, span), each line its own trace."""
    gap = span // (streams * per_stream)
    return MemorySource(
        {
            Labels.from_dict({"app": "a", "pod": str(p)}): [
                ((i * streams + p) * gap, f"level=info trace_id={p}-{i} n={i}") for i in range(per_stream)
            ]
            for p in range(streams)
        }
    )


def run(
    query: str,
    source,
    limit: int = 100,
    direction: str = "backward",
    interval: int | None = None,
    guard: QueryGuard | None = None,
    max_series: int = 500,
    span: int = HOUR,
):
    params = QueryParams.for_range(0, span, step=60 * NS, limit=limit, direction=direction, interval=interval)
    return evaluate(parse(query), params, source, max_series=max_series, guard=guard)


def entries(result) -> list[tuple[int, str, Labels]]:
    return sorted((int(t), line, s.labels) for s in result.streams for t, line in zip(s.ts, s.texts()))


# ---------------------------------------------------------------- linear in rows


def test_a_parser_making_every_entry_its_own_stream_stays_linear():
    """20,000 entries, each its own series after `| logfmt`: the old per-series mask and take
    was series x rows (minutes); one sort and split answer in seconds."""
    source = spread(4, 5000)
    began = time.perf_counter()
    result = run('{app="a"} | logfmt', source, limit=20_000)
    elapsed = time.perf_counter() - began
    assert len(result.streams) == 20_000 and all(len(s.ts) == 1 for s in result.streams)
    assert elapsed < 30, f"{elapsed:.1f}s for 20k single-entry streams"
    trace = {s.labels.get("trace_id") for s in result.streams}
    assert len(trace) == 20_000


# ---------------------------------------------------------------- limit bounds the work


@pytest.mark.parametrize("direction", ["backward", "forward"])
def test_limit_stops_reading_once_the_answer_is_certain(direction):
    counting = CountingSource(spread(4, 25_000))
    got = run('{app="a"} | logfmt', counting, limit=50, direction=direction)
    assert counting.rows < 100_000 // 10, f"read {counting.rows} of 100000 rows for limit 50"
    whole = run('{app="a"} | logfmt', spread(4, 25_000), limit=50, direction=direction, guard=None)
    assert entries(got) == entries(whole)
    times = [t for t, _, _ in entries(got)]
    assert len(times) == 50
    assert (min(times) > 99_000 * (HOUR // 100_000)) if direction == "backward" else (max(times) < HOUR // 100)


@pytest.mark.parametrize("direction", ["backward", "forward"])
@pytest.mark.parametrize(
    "limit,interval,query",
    [
        (7, None, '{app="a"}'),
        (1000, None, '{app="a"} |= "n=1"'),
        (30, 90 * NS, '{app="a"}'),
        (100_000, None, '{app="a"} | logfmt | n > 100'),
        (5, None, '{app="a"} | logfmt | drop trace_id, pod'),  # series made of several streams, equal times
    ],
)
def test_windowed_answers_equal_one_full_read(monkeypatch, direction, limit, interval, query):
    # equal timestamps across streams and inside one: ties must not straddle windows
    rows = {
        Labels.from_dict({"app": "a", "pod": str(p)}): [
            ((i // 3) * 7 * NS, f"n={i} trace_id={p}-{i}") for i in range(400)
        ]
        for p in range(3)
    }
    windowed = run(query, MemorySource(rows), limit=limit, direction=direction, interval=interval)
    monkeypatch.setattr(log_windows, "FIRST_WINDOW_PARTS", 1)  # one window: the whole range at once
    whole = run(query, MemorySource(rows), limit=limit, direction=direction, interval=interval)
    assert [(s.labels, list(s.ts), s.lines) for s in windowed.streams] == [
        (s.labels, list(s.ts), s.lines) for s in whole.streams
    ]


@pytest.mark.parametrize("read_bytes,one_select", [(None, False), (SMALL_READ_BYTES, True), (4 << 20, False)])
def test_a_query_known_to_read_little_reads_its_range_in_one_select(read_bytes, one_select):
    """60 entries over the hour, limit 100: windows from 1/32 of the range take several selects
    (each an index lookup and an ingester round trip); the frontend's read size says one is enough."""
    source = spread(2, 30)
    params = replace(QueryParams.for_range(0, HOUR, step=60 * NS, limit=100), read_bytes=read_bytes)
    counting = CountingSource(source)
    got = evaluate(parse('{app="a"}'), params, counting, max_series=500)
    assert (counting.selects == 1) is one_select, counting.selects
    assert entries(got) == entries(run('{app="a"}', source))


def test_limit_zero_reads_nothing():
    counting = CountingSource(spread(2, 100))
    assert run('{app="a"}', counting, limit=0).streams == []
    assert counting.selects == 0


# ---------------------------------------------------------------- deadline and cancellation


def test_a_query_past_its_deadline_stops_with_504_naming_the_timeout():
    guard = QueryLimits.starting_now(2 * NS, 0, now=time.time() - 5).guard()
    counting = CountingSource(spread(4, 100))
    with pytest.raises(QueryTimedOut) as err:
        run('{app="a"} | logfmt', counting, guard=guard)
    assert err.value.status == 504
    assert str(err.value).startswith("request timed out after 2s (query_timeout)")
    assert counting.blocks <= 1  # stopped at the first check, not after the scan


def test_a_cancelled_query_stops_between_blocks():
    guard = QueryGuard()
    source = spread(50, 20)
    seen = []

    class CancelAfterThree(CountingSource):
        def select_logs(self, request):
            for block in super().select_logs(request):
                seen.append(block)
                if len(seen) == 3:
                    guard.cancel()  # as the querier's heartbeat watcher does from its thread
                yield block

    with pytest.raises(QueryCancelled):
        run('count_over_time({app="a"} | logfmt [1m])', CancelAfterThree(source), guard=guard)
    assert len(seen) == 3


# ---------------------------------------------------------------- memory budget and series limit


def test_memory_budget_fails_the_query_with_a_400_naming_the_limit():
    guard = QueryGuard(memory_limit=200_000)
    with pytest.raises(QueryMemoryExceeded) as err:
        run('{app="a"} | logfmt', spread(4, 5000), limit=20_000, guard=guard)
    assert err.value.status == 400 and "max_query_memory_bytes" in str(err.value)
    assert guard.peak > 200_000
    # the same query fits a budget large enough
    fits = QueryGuard(memory_limit=500_000_000)
    assert len(run('{app="a"} | logfmt', spread(4, 5000), limit=20_000, guard=fits).streams) == 20_000


def test_metric_query_memory_is_charged_too():
    guard = QueryGuard(memory_limit=100_000)
    with pytest.raises(QueryMemoryExceeded):
        run('sum(count_over_time({app="a"} | logfmt [1m]))', spread(4, 2000), guard=guard)


def test_max_series_fails_as_soon_as_it_is_crossed():
    counting = CountingSource(spread(200, 10))
    with pytest.raises(LimitError, match=r"maximum number of series \(5\) reached"):
        run('count_over_time({app="a"} [1m])', counting, max_series=5)
    assert counting.blocks < 200 // 2  # not after the full scan
    # an outer aggregation may reduce the series: only its result counts
    assert len(run('sum by (app) (count_over_time({app="a"} [1m]))', spread(200, 10), max_series=5).series) == 1


def test_limits_combine_tenants_by_the_strictest():
    assert smallest_positive([0, 30, 10]) == 10 and smallest_positive([0, 0]) == 0
    assert QueryLimits.starting_now(0, 0).deadline is None
    limits = QueryLimits.starting_now(3 * NS, 7, now=100.0)
    assert (limits.deadline, limits.guard().memory_limit) == (103.0, 7)


def test_a_range_aggregation_grouped_by_a_parsed_label_is_series_capped():
    query = 'max_over_time({app="a"} | logfmt | unwrap n [1m]) by (trace_id)'
    assert isinstance(parse(query), ast.RangeAggregation)
    counting = CountingSource(spread(50, 40))
    with pytest.raises(LimitError):
        run(query, counting, max_series=10)
    assert counting.blocks < 50
    # grouped by a label with few values: the cap counts groups, not the streams read
    assert (
        len(run('max_over_time({app="a"} | logfmt | unwrap n [1m]) by (app)', spread(50, 40), max_series=10).series)
        == 1
    )


def test_check_calls_the_pacer_first_and_then_sees_what_happened_while_it_waited():
    guard = QueryGuard()
    calls = []
    guard.pacer = lambda: calls.append("paced")
    guard.check()
    assert calls == ["paced"]
    assert not guard.stopping()
    guard.pacer = guard.cancel  # cancelled while it waited for its turn
    with pytest.raises(QueryCancelled):
        guard.check()
    assert guard.stopping()
    assert QueryGuard(deadline=time.time() - 1).stopping()
