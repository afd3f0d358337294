"""A small query's planning read brings the ingesters' rows, and its selects are answered from
them: the same answers as selects of their own, one ingester round trip fewer. Plain classes,
no Ray (tests/fuzz/harness.py wires the querier over in-process ingesters)."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from svclog.frontend.budgets import read_windows, step_reach, whole_windows
from svclog.frontend.frontend import FrontendSettings, QueryFrontend
from svclog.logql.engine.json_codec import result_to_json
from svclog.logql.parser import parse
from svclog.model import Entry, Labels, Matcher, MatchType, PushStream
from svclog.querier.prefetched import IngesterRows, Prefetched, PrefetchedIngesters, rows_of
from svclog.querier.request import RangeRequest
from svclog.querier.volume import index_stats
from tests.fuzz.harness import InProcessBackend, harness_config

NS = 10**9
MINUTE = 60 * NS
T0 = 1_793_491_200 * NS  # 2026-11-01T00:00:00Z
LOOKBACK = 30 * NS
WORDS = ["alpha", "beta", "gamma", "error", "timeout", "ok"]


@pytest.fixture
def backend(tmp_path):
    """Random lines of 6 streams over 40 minutes, the first 20 minutes flushed to the store
    (two ingesters, each stream replicated to both)."""
    rnd = random.Random(7)
    backend = InProcessBackend(
        harness_config(str(tmp_path), "-limits.reject-old-samples=false", "-common.replication-factor=2"),
        str(tmp_path),
    )
    for half in range(2):
        streams = []
        for s in range(6):
            stamps = sorted(rnd.sample(range(20 * 60), 150))
            entries = [
                Entry(T0 + half * 20 * MINUTE + ts * NS, f"level={rnd.choice(WORDS)} n={i} {rnd.choice(WORDS)}")
                for i, ts in enumerate(stamps)
            ]
            streams.append(PushStream(Labels((("app", "p"), ("pod", f"p{s}"), ("env", f"e{s % 2}"))), entries))
        backend.distributor.push("acme", streams)
        if half == 0:
            for ingester in backend.ingesters.values():
                ingester.flush_all()
    return backend


QUERIES = [
    '{app="p"}',
    '{env="e1"} |= "error"',
    '{app="p"} != "ok" |~ "gam+a"',
    'count_over_time({app="p"}[5m])',
    'sum by (env) (rate({app="p"} |= "timeout" [1m]))',
    'sum(count_over_time({pod="p3"} | logfmt | level="beta" [10m] offset 5m))',
    'count_over_time({app="p"}[1m]) / count_over_time({env="e0"}[5m])',
]


def _answers(backend, query: str, start: int, end: int, rows_cap: int) -> tuple[list, int]:
    """The query's pieces run by the querier after a planning read asking rows up to `rows_cap`
    (the frontend's order), and how many selects went to the ingesters themselves."""
    frontend = QueryFrontend(FrontendSettings(split_queries_by_interval=15 * MINUTE, shards=2))
    plan = frontend.plan(RangeRequest(query, start, end, 60 * NS, None, 5000, "backward"))
    windows = whole_windows(plan, LOOKBACK)  # as the frontend asks
    facts = backend.querier.read_facts(["acme"], None, windows, None, rows_cap, step_reach(plan))
    readers = backend.querier.ingesters
    before = readers.selects
    results = [
        result_to_json(backend.querier.execute(["acme"], sub, None, facts.prefetched).result) for sub in plan.subqueries
    ]
    return results, readers.selects - before


@pytest.mark.parametrize("query", QUERIES)
def test_answers_are_the_same_with_and_without_the_prefetched_rows(backend, query):
    rnd = random.Random(query)
    for _ in range(4):
        start = T0 + rnd.randrange(0, 30) * MINUTE + rnd.randrange(NS)
        end = start + rnd.randrange(1, 15) * MINUTE
        with_rows, asked = _answers(backend, query, start, end, rows_cap=10 << 20)
        without, asked_without = _answers(backend, query, start, end, rows_cap=0)
        assert with_rows == without
        assert asked == 0 and asked_without > 0  # every select was answered from the rows


def test_rows_are_not_sent_past_the_cap_and_the_selects_then_ask_the_ingesters(backend):
    windows = read_windows(parse('{app="p"}'), T0, T0 + 40 * MINUTE, LOOKBACK)
    facts = backend.querier.read_facts(["acme"], None, windows, None, 1000)
    assert not facts.prefetched.rows
    sizes = [(read.chunks, read.bytes) for read in facts.reads]
    assert sizes == backend.querier.read_sizes(["acme"], windows)  # the same stats either way
    _, asked = _answers(backend, '{app="p"}', T0, T0 + 40 * MINUTE, rows_cap=1000)
    assert asked > 0


def test_rows_come_only_while_the_whole_query_reads_less_than_the_cap(backend):
    """The index's part counts: the ingesters' rows alone fitting the cap is not enough."""
    windows = read_windows(parse('{app="p"}'), T0, T0 + 40 * MINUTE, LOOKBACK)
    [(_, total)] = backend.querier.read_sizes(["acme"], windows)
    from_index = index_stats(backend.querier.index, None, ["acme"], *windows[0])["bytes"]
    assert 0 < from_index < total  # the first 20 minutes are flushed, the rest in the ingesters
    for cap, rows in ((total - 1, False), (2 * total, True)):
        facts = backend.querier.read_facts(["acme"], None, windows, None, cap)
        assert bool(facts.prefetched.rows) is rows and [read.bytes for read in facts.reads] == [total]


def test_an_ingester_sends_its_rows_with_its_stats_only_under_the_cap(backend):
    ingester = next(iter(backend.ingesters.values()))
    matchers = (Matcher("app", MatchType.EQ, "p"),)
    window = (T0, T0 + 40 * MINUTE)
    stats, packed = ingester.stats_and_rows("acme", matchers, *window, 1 << 30, window)
    assert stats == ingester.stream_stats("acme", matchers, T0, T0 + 40 * MINUTE)
    rows = {labels: table for labels, table in packed.unpack()}
    selected = {labels: table for labels, table in ingester.select("acme", matchers, T0, T0 + 40 * MINUTE)}
    assert rows.keys() == selected.keys() and all(rows[k].equals(selected[k]) for k in rows)
    assert ingester.stats_and_rows("acme", matchers, *window, 100, window)[1] is None
    stats, nothing = ingester.stats_and_rows("nobody", matchers, *window, 100, window)
    assert stats == [] and nothing is not None and nothing.unpack() == []
    # the rows are every ingester's, or none
    assert rows_of("acme", matchers, *window, [packed, nothing], 2) is not None
    assert rows_of("acme", matchers, *window, [packed, None], 2) is None
    assert rows_of("acme", matchers, *window, [packed], 2) is None  # one did not answer


class _Ingesters:
    pages = True
    applies_line_filters = True

    def __init__(self):
        self.asked: list[tuple] = []

    def select(self, *args, **more):
        self.asked.append((args, more))
        return [], 1, None, None, frozenset()


def test_selects_outside_the_rows_window_or_of_a_later_page_go_to_the_ingesters():
    matchers = (Matcher("app", MatchType.EQ, "p"),)
    table = pa.table({"ts": pa.array([10, 20, 30], pa.int64()), "line": ["a", "b", "c"]})
    rows = IngesterRows("acme", matchers, 10, 31, [(Labels((("app", "p"),)), table)], 2, frozenset({"k"}))
    ingesters = _Ingesters()
    reader = PrefetchedIngesters(Prefetched([rows]), ingesters)
    found, reached, scan, cursor, covered = reader.select("acme", matchers, 15, 31, None)
    assert [t.column("line").to_pylist() for _, t in found] == [["b", "c"]]
    assert (reached, scan.head_lines, scan.head_bytes, cursor, covered) == (2, 2, 2, None, frozenset({"k"}))
    assert not ingesters.asked
    reader.select("acme", matchers, 5, 20, None)  # starts before the rows
    reader.select("other", matchers, 15, 20, None)
    reader.select("acme", (Matcher("app", MatchType.EQ, "q"),), 15, 20, None)
    reader.select("acme", matchers, 15, 20, None, after={"i": None})  # a later page
    assert len(ingesters.asked) == 4 and reader.pages
