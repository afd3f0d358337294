"""Read budgets (`max_chunks_per_query`, `max_query_bytes_read`, `max_querier_bytes_read`),
checked from the index before any chunk is read: plain classes, no Ray."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from svclog.config.limits import LimitsConfig
from svclog.frontend.budgets import BudgetCheck, QueryTooLarge, ReadBudget, ReadSize, has_filter, read_windows
from svclog.frontend.frontend import FrontendSettings, QueryFrontend
from svclog.gocompat.humanize import ibytes
from svclog.logql.parser import parse
from svclog.model import Entry, Labels, PushStream
from svclog.querier.request import RangeRequest
from tests.fuzz.harness import InProcessBackend, harness_config

NS = 10**9
HOUR = 3600 * NS
T0 = 1_793_491_200 * NS  # 2026-11-01T00:00:00Z
LOOKBACK = 30 * NS


def test_ibytes_is_go_humanize_ibytes():
    assert [ibytes(n) for n in (0, 9, 10, 1023, 1024, 1536, 82854982, 150 * 10**9)] == [
        "0 B",
        "9 B",
        "10 B",
        "1023 B",
        "1.0 KiB",
        "1.5 KiB",
        "79 MiB",
        "140 GiB",
    ]


def test_budget_takes_the_strictest_positive_limit_per_tenant():
    base = LimitsConfig()
    assert ReadBudget.of([base]) == ReadBudget(2_000_000, 0, 150 * 10**9)
    strict = replace(base, max_query_bytes_read=1000, max_querier_bytes_read=0, max_chunks_per_query=0)
    assert ReadBudget.of([base, strict]) == ReadBudget(2_000_000, 1000, 150 * 10**9)
    assert not ReadBudget.of([replace(strict, max_query_bytes_read=0)]).active


def test_windows_follow_each_selector_range_and_offset():
    expr = parse('sum(rate({a="x"} |= "y" [5m] offset 1m)) / count_over_time({b="c"}[1h])')
    windows = read_windows(expr, 10 * HOUR, 11 * HOUR, LOOKBACK)
    assert [(w[0][0].name, w[1], w[2]) for w in windows] == [
        ("a", 10 * HOUR - 360 * NS, 11 * HOUR - 60 * NS),
        ("b", 9 * HOUR, 11 * HOUR),
    ]
    [(matchers, start, end)] = read_windows(parse('{a="x"}'), 10 * HOUR, 11 * HOUR, LOOKBACK)
    assert start == 10 * HOUR - LOOKBACK and end == 11 * HOUR  # a log selector looks back too


@pytest.mark.parametrize(
    ("query", "filtered"),
    [
        ('{a="x"}', False),
        ('{a="x"} | json', False),
        ('{a="x"} |= ""', False),
        ('{a="x"} |= "y"', True),
        ('{a="x"} != ""', True),
        ('{a="x"} | json | level="error"', True),
        ('count_over_time({a="x"}[1m])', True),
    ],
)
def test_only_filtered_queries_count_against_max_query_bytes_read(query, filtered):
    assert has_filter(parse(query)) is filtered


# ---------------------------------------------------------------- over real data in process


@pytest.fixture
def backend(tmp_path):
    """Two hours of one tenant: 4 streams x 1200 lines in the first 40 minutes of each, the first
    hour flushed to the store."""
    backend = InProcessBackend(harness_config(str(tmp_path), "-limits.reject-old-samples=false"), str(tmp_path))
    for hour in range(2):
        streams = [
            PushStream(
                Labels((("app", "budget"), ("pod", f"p{pod}"))),
                [Entry(T0 + hour * HOUR + i * 2 * NS, f"level=info pod=p{pod} n={i} " + "x" * 80) for i in range(1200)],
            )
            for pod in range(4)
        ]
        backend.distributor.push("acme", streams)
        if hour == 0:
            for ingester in backend.ingesters.values():
                ingester.flush_all()
    return backend


def _check(backend, query: str, budget: ReadBudget, *, start=T0, end=T0 + 2 * HOUR, shards=1) -> list:
    """Run the budget check of `query` against the in-process querier; the windows it asked."""
    frontend = QueryFrontend(FrontendSettings(split_queries_by_interval=HOUR, shards=shards))
    plan = frontend.plan(RangeRequest(query, start, end, 60 * NS, None, 100, "backward"))
    asked: list = []

    async def sizes(windows):
        asked.append(windows)
        return [ReadSize(c, b) for c, b in backend.querier.read_sizes(["acme"], windows)]

    asyncio.run(BudgetCheck(budget, plan, LOOKBACK, sharding=shards > 1).run(sizes))
    return asked


def _total(backend, query: str) -> ReadSize:
    windows = read_windows(parse(query), T0, T0 + 2 * HOUR, LOOKBACK)
    return sum((ReadSize(c, b) for c, b in backend.querier.read_sizes(["acme"], windows)), ReadSize())


def test_the_index_knows_chunks_and_bytes_of_store_and_ingesters(backend):
    both = _total(backend, 'count_over_time({app="budget"}[1m])')
    one = _total(backend, 'count_over_time({app="budget", pod="p0"}[1m])')
    assert both.chunks >= 8 and both.bytes > 2 * 4 * 1200 * 80  # flushed hour + unflushed hour
    assert 0 < one.bytes < both.bytes and one.chunks < both.chunks


def test_a_query_under_every_budget_passes_with_one_index_round(backend):
    asked = _check(backend, 'count_over_time({app="budget"} |= "n=1" [1m])', ReadBudget.of([LimitsConfig()]))
    assert len(asked) == 1


def test_too_many_chunks_is_refused_naming_the_limit(backend):
    query = 'count_over_time({app="budget"}[1m])'
    chunks = _total(backend, query).chunks
    _check(backend, query, ReadBudget(max_chunks=chunks))  # at the limit: allowed
    with pytest.raises(QueryTooLarge) as err:
        _check(backend, query, ReadBudget(max_chunks=chunks - 1))
    assert str(err.value) == f"the query hit the max number of chunks limit (limit: {chunks - 1} chunks)"
    assert err.value.status == 400


def test_too_many_bytes_for_the_query_is_refused_with_the_reference_message(backend):
    query = 'sum(count_over_time({app="budget"} |= "level" [1m]))'
    total = _total(backend, query).bytes
    with pytest.raises(QueryTooLarge) as err:
        _check(backend, query, ReadBudget(max_query_bytes=total // 2))
    assert str(err.value) == (
        f"the query would read too many bytes (query: {ibytes(total)}, limit: {ibytes(total // 2)}); "
        "consider adding more specific stream selectors or reduce the time range of the query"
    )
    _check(
        backend,
        'sum(count_over_time({app="budget", pod="p1"} |= "level" [1m]))',
        ReadBudget(max_query_bytes=total // 2),
    )
    # a limited log query (no filter) stops at its line limit: not held to max_query_bytes_read
    _check(backend, '{app="budget"} | logfmt', ReadBudget(max_query_bytes=1))


def test_the_querier_budget_is_per_time_piece(backend):
    """Split by the hour, each piece reads about half: a budget between half and the whole passes
    the query (after a second index round, piece by piece); under half fails it."""
    query = 'sum(count_over_time({app="budget"} |= "level" [1m]))'
    total = _total(backend, query).bytes
    asked = _check(backend, query, ReadBudget(max_querier_bytes=int(total * 0.7)))
    assert len(asked) == 2 and len(asked[1]) >= 2
    with pytest.raises(QueryTooLarge) as err:
        _check(backend, query, ReadBudget(max_querier_bytes=total // 4))
    assert str(err.value).startswith("query too large to execute on a single querier: (query: ")
    assert f"limit: {ibytes(total // 4)}); consider adding more specific stream selectors" in str(err.value)


def test_a_sharded_piece_counts_its_share_and_says_so(backend):
    query = 'sum(count_over_time({app="budget"} |= "level" [1m]))'
    total = _total(backend, query).bytes
    with pytest.raises(QueryTooLarge) as err:
        _check(backend, query, ReadBudget(max_querier_bytes=total // 16), shards=2)
    assert str(err.value).startswith("shard query is too large to execute on a single querier: (query: ")
    _check(backend, query, ReadBudget(max_querier_bytes=int(total * 0.35)), shards=2)  # ~1/4 per shard piece
    with pytest.raises(QueryTooLarge) as err:  # a log query is never sharded: un-shardable
        _check(backend, '{app="budget"} |= "level"', ReadBudget(max_querier_bytes=total // 16), shards=2)
    assert str(err.value).startswith("un-shardable query too large to execute on a single querier: (query: ")


def test_one_querier_call_gives_data_spans_and_read_sizes(backend):
    """One call (one to each ingester) answers what the separate calls answer, window by window."""
    query = 'count_over_time({app="budget"}[1m]) / count_over_time({app="budget", pod="p0"}[5m])'
    windows = read_windows(parse(query), T0, T0 + 2 * HOUR, LOOKBACK)
    spans, reads, prefetched = backend.querier.read_facts(["acme"], (T0, T0 + 2 * HOUR), windows)
    assert spans == backend.querier.data_spans(["acme"], T0, T0 + 2 * HOUR)
    sizes = [(read.chunks, read.bytes) for read in reads]
    assert sizes == backend.querier.read_sizes(["acme"], windows)
    assert all(read.probed_bytes == read.bytes for read in reads)  # no line filter: nothing ruled out
    assert len(sizes) == 2 and sizes[0] != sizes[1] and all(size > 0 for _, size in sizes)
    assert not prefetched.rows  # no rows asked for
    assert backend.querier.read_facts(["acme"], None, [])[0] is None


@pytest.mark.parametrize("query", ["vector(1)", "2 > bool 1", "1 + 1"])
def test_a_query_that_reads_nothing_asks_nothing(backend, query):
    frontend = QueryFrontend(FrontendSettings(split_queries_by_interval=HOUR))
    plan = frontend.plan(RangeRequest(query, T0, T0 + 2 * HOUR, 60 * NS, None, 100, "backward"))
    check = BudgetCheck(ReadBudget(1, 1, 1), plan, LOOKBACK, sharding=False)
    assert check.whole_windows() == []
    assert check.check_whole([]) is False
