"""How wide the frontend plans a query: time pieces and shards only where they pay, same answers."""

from __future__ import annotations

from svclog.frontend import params as qp
from svclog.frontend.frontend import FrontendSettings, QueryFrontend
from svclog.frontend.results_cache import ResultsCache
from svclog.logql.engine.json_codec import result_to_json
from svclog.logql.engine.memory_source import MemorySource
from svclog.logql.rewrite.subquery import evaluate_subquery
from svclog.model import NS, Labels

HOUR = 3600 * NS
T0 = 1_793_491_200 * NS  # an hour boundary
NOW = T0 + 10 * HOUR
METRIC = 'sum by (app) (count_over_time({env="prod"} |= "error" [1m]))'
LOGS = '{env="prod"} |= "error"'


def _frontend(shards: int = 2, cache: bool = False) -> QueryFrontend:
    return QueryFrontend(FrontendSettings(shards=shards), ResultsCache(1 << 20, 60 * NS) if cache else None)


def _request(query: str, start: int, end: int, **extra: str):
    args = {"query": query, "start": str(start), "end": str(end), "step": "60", "limit": "50", **extra}
    return qp.range_request(args, now=NOW)


def _source() -> MemorySource:
    streams = {}
    for app in range(6):
        labels = Labels.from_dict({"app": f"a{app}", "env": "prod"})
        streams[labels] = [
            (T0 + i * 7 * NS + app, f"level={'error' if i % 3 == 0 else 'info'} i={i}") for i in range(3 * 3600 // 7)
        ]
    return MemorySource(streams)


def _answer(frontend: QueryFrontend, request, source: MemorySource, busy: int = 0) -> dict:
    plan = frontend.plan(request, busy=busy)
    partials = [evaluate_subquery(sub, source) for sub in plan.subqueries]
    return result_to_json(plan.merge(partials))


def test_a_range_within_one_interval_is_not_cut_at_the_hour_boundary():
    request = _request(METRIC, T0 + HOUR // 2, T0 + 3 * HOUR // 2)  # crosses T0 + 1h
    plan = _frontend(shards=2).plan(request)
    assert len(plan.subqueries) == 2  # the two shards, one piece each
    assert {(s.params.start, s.params.end) for s in plan.subqueries} == {(request.start, request.end)}


def test_longer_ranges_and_cached_plans_keep_their_time_pieces():
    long_range = _frontend(shards=1).plan(_request(METRIC, T0, T0 + 3 * HOUR))
    assert len(long_range.subqueries) == 4  # steps at 0..3h: pieces [0,1h) [1h,2h) [2h,3h) and the step at 3h
    cached = _frontend(shards=1, cache=True).plan(_request(METRIC, T0 + HOUR // 2, T0 + 3 * HOUR // 2))
    assert len(cached.subqueries) == 2  # aligned pieces are what the results cache reuses


def test_shards_only_onto_idle_queriers():
    frontend = _frontend(shards=4)
    request = _request(METRIC, T0, T0 + HOUR // 2)
    assert [len(frontend.plan(request, busy=b).subqueries) for b in (0, 1, 2, 3, 9)] == [4, 3, 2, 1, 1]


def test_a_limited_log_query_is_one_sub_query_within_an_interval_and_never_sharded():
    frontend = _frontend(shards=4)
    assert len(frontend.plan(_request(LOGS, T0 + HOUR // 2, T0 + 3 * HOUR // 2)).subqueries) == 1
    assert len(frontend.plan(_request(LOGS, T0, T0 + 3 * HOUR)).subqueries) == 3  # time pieces, unsharded


def test_every_width_gives_the_same_answer():
    source = _source()
    for query in (METRIC, LOGS, 'topk(2, sum by (app) (rate({env="prod"}[5m])))'):
        for start, end in ((T0 + HOUR // 2, T0 + 3 * HOUR // 2), (T0, T0 + 3 * HOUR)):
            request = _request(query, start, end)
            whole = _answer(QueryFrontend(FrontendSettings(split_queries_by_interval=0, shards=1)), request, source)
            for shards, busy, cache in ((2, 0, False), (3, 1, False), (2, 0, True), (1, 0, False)):
                assert _answer(_frontend(shards, cache), request, source, busy) == whole, (query, shards, busy, cache)
