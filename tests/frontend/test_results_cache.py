"""The frontend's results cache and query-length limit, with sub-queries run in-process."""

from __future__ import annotations

import pytest

from svclog.frontend import params as qp
from svclog.frontend.frontend import FrontendSettings, QueryFrontend
from svclog.frontend.results_cache import CacheCounters, ResultsCache
from svclog.logql.engine.memory_source import MemorySource
from svclog.logql.rewrite.subquery import evaluate_subquery
from svclog.logql.source import SourceStats
from svclog.model import NS, Labels, ValidationError
from svclog.querier.querier import PartialResult

HOUR = 3600 * NS
T0 = 1_793_491_200 * NS  # an hour boundary
NOW = T0 + 10 * HOUR


def _source(lines_per_hour: int = 60) -> MemorySource:
    entries = [
        (T0 + i * HOUR // lines_per_hour, f"level={'error' if i % 3 == 0 else 'info'} n={i}")
        for i in range(3 * lines_per_hour)
    ]
    return MemorySource({Labels.from_dict({"app": "api"}): entries})


class Runner:
    """Runs a query the way the deployment does: lookup, run the misses, remember, respond."""

    def __init__(self, frontend: QueryFrontend, source: MemorySource):
        self.frontend, self.source, self.runs = frontend, source, 0

    def query(self, query: str, start: int, end: int, now: int = NOW, tenants=("t",)) -> dict:
        request = qp.range_request({"query": query, "start": str(start), "end": str(end), "step": "60"}, now=now)
        plan = self.frontend.plan(request)
        cached = self.frontend.lookup(list(tenants), plan, now=now)
        fresh = {}
        for i, sub in enumerate(plan.subqueries):
            if i not in cached.hits:
                self.runs += 1
                fresh[i] = PartialResult(evaluate_subquery(sub, self.source), SourceStats(store_lines=1))
        self.frontend.remember(cached, fresh)
        partials = [cached.hits.get(i) or fresh[i] for i in range(len(plan.subqueries))]
        return self.frontend.respond(plan, partials, 0.1, 0.0, cached.counters)


def _frontend(digest=lambda tenant: "", **settings) -> QueryFrontend:
    return QueryFrontend(FrontendSettings(shards=2, **settings), ResultsCache(1 << 20, 10 * 60 * NS), digest)


QUERY = 'sum by (level) (count_over_time({app="api"} | logfmt [5m]))'


def test_second_run_is_served_from_the_cache_with_the_same_answer():
    runner = Runner(_frontend(), _source())
    first = runner.query(QUERY, T0, T0 + 3 * HOUR)
    runs = runner.runs
    second = runner.query(QUERY, T0, T0 + 3 * HOUR)
    assert runner.runs == runs  # nothing ran again
    assert second["result"] == first["result"]
    assert second["stats"]["cache"]["result"]["entriesFound"] == runs
    assert second["stats"]["summary"]["totalLinesProcessed"] == 0


def test_recent_sub_queries_are_not_cached():
    runner = Runner(_frontend(), _source())
    end = T0 + 3 * HOUR
    runner.query(QUERY, T0, end, now=end + 5 * 60 * NS)  # the last split ends within the 10m freshness
    runs = runner.runs
    runner.query(QUERY, T0, end, now=end + 5 * 60 * NS)
    assert 0 < runner.runs - runs < runs  # only the fresh split ran again


def test_log_queries_tenants_and_deletes_are_part_of_the_key():
    digest = {"t": "none"}
    runner = Runner(_frontend(lambda tenant: digest.get(tenant, "")), _source())
    runner.query('{app="api"} |= "error"', T0, T0 + HOUR)
    runs = runner.runs
    runner.query('{app="api"} |= "error"', T0, T0 + HOUR)
    assert runner.runs == 2 * runs  # log queries always run
    runner.query(QUERY, T0, T0 + HOUR)
    runs = runner.runs
    runner.query(QUERY, T0, T0 + HOUR, tenants=("u",))
    assert runner.runs > runs
    runs = runner.runs
    digest["t"] = "a delete request"
    runner.query(QUERY, T0, T0 + HOUR)
    assert runner.runs > runs


def test_size_bound_evicts_least_recently_used():
    cache = ResultsCache(max_bytes=4000, max_freshness_ns=0)
    counters = CacheCounters()
    for i in range(10):
        cache.put(f"k{i}", "x" * 500, counters)
    assert cache.size_bytes <= 4000
    assert cache.get("k0", counters) is None
    assert cache.get("k9", counters) == "x" * 500
    cache.put("huge", "x" * 3000, counters)  # larger than a quarter of the bound: not kept
    assert cache.get("huge", counters) is None


def test_query_longer_than_max_query_length_is_a_400_error():
    frontend = _frontend(max_query_length=721 * HOUR)
    request = qp.range_request({"query": QUERY, "start": str(T0 - 722 * HOUR), "end": str(T0)}, now=NOW)
    with pytest.raises(
        ValidationError,
        match=r"the query time range exceeds the limit "
        r"\(query length: 722h0m0s, limit: 721h0m0s\)",
    ):
        frontend.plan(request)
    frontend.plan(qp.range_request({"query": QUERY, "start": str(T0 - 720 * HOUR), "end": str(T0)}, now=NOW))
