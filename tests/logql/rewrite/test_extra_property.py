"""The split/shard/merge property over queries chosen to reach every merge path
(re-aggregation, topk over the union, avg as sum/count, colliding series, sort, ...)."""

from __future__ import annotations

import pytest

from svclog.logql.engine.params import QueryParams
from svclog.logql.parser import parse
from svclog.model import NS
from tests.logql.rewrite.conformance_queries import source_for
from tests.logql.rewrite.property import differences, planned, unsplit, up_to_ties

W = 1793491200 * NS  # the data set's window: two hours from here
UNWRAP = '{app="checkout"} | logfmt | unwrap duration(duration) | __error__=""'
ALL = '{app=~".+"}'

METRIC_QUERIES = [
    'sum by (app) (rate({namespace="shop"}[5m]))',
    f"count by (env) (count_over_time({ALL}[10m]))",
    f"max by (app) (bytes_over_time({ALL}[5m]))",
    'min(count_over_time({namespace="shop"}[5m]))',
    f"avg by (cluster) (count_over_time({ALL}[5m]))",
    f"avg(bytes_rate({ALL}[5m]))",
    f"topk(3, sum by (app) (count_over_time({ALL}[5m])))",
    f"topk(2, count_over_time({ALL}[5m]))",
    'bottomk by (app) (1, count_over_time({namespace="shop"}[5m]))',
    f"sum by (app) (count_over_time({ALL} | drop pod [5m]))",
    f"count_over_time({ALL} | drop pod, cluster, level [5m])",
    f"bytes_over_time({ALL} | keep app [5m])",
    f'count_over_time({ALL} | label_format app="x" [5m])',
    f'sum by (word) (count_over_time({ALL} | regexp "^(?P<word>\\\\w+)" [5m]))',
    f"min_over_time({UNWRAP} [10m]) by (env)",
    f"first_over_time({UNWRAP} [10m]) by (env)",
    f"max_over_time({UNWRAP} [10m])",
    f"max_over_time({UNWRAP} [10m]) by (env)",
    f"min by (env) (min_over_time({UNWRAP} [10m]))",
    f"sum_over_time({UNWRAP} [10m])",
    f"sum by (pod) (rate({UNWRAP} [10m]))",
    f"avg_over_time({UNWRAP} [10m]) by (env)",
    f"avg_over_time({UNWRAP} [10m])",
    f"avg_over_time({UNWRAP} [10m]) without (pod)",
    f"sum by (env) (avg_over_time({UNWRAP} [10m]) by (env, pod))",
    f"max(avg_over_time({UNWRAP} [10m]) by (env))",
    f"sum(avg_over_time({UNWRAP} [10m]) by (env) + count_over_time({ALL}[10m]))",
    f"quantile_over_time(0.9, {UNWRAP} [10m]) by (env)",
    f"quantile_over_time(0.5, {UNWRAP} [10m])",
    f"stddev by (app) (count_over_time({ALL}[5m]))",
    f"stdvar(sum by (app) (count_over_time({ALL}[5m])))",
    f'label_replace(sum by (app) (count_over_time({ALL}[5m])), "short", "$1", "app", "(.).*")',
    f'label_replace(count_over_time({ALL}[5m]), "app", "same", "app", ".*")',
    f"sort_desc(sum by (app) (count_over_time({ALL}[5m])))",
    'sort(count_over_time({namespace="shop"}[5m]))',
    f"sum by (app) (count_over_time({ALL}[5m])) > 100",
    f"sum by (app) (count_over_time({ALL}[5m])) * 2 + 1",
    'sum by (pod) (count_over_time({app="api"}[5m])) and sum by (pod) (count_over_time({level="error"}[5m]))',
    'sum(rate({app="nginx"}[5m])) / sum(rate({app=~"nginx|apache"}[5m]))',
    'absent_over_time({app="nope"}[5m])',
    'absent_over_time({app="api"}[1m])',
    f"sum(count_over_time({ALL}[5m] offset 10m))",
    'vector(1) + sum(count_over_time({app="db"}[1m]))',
    f"sum by (app) (count_over_time({ALL}[1h]))",
    "sum(vector(2)) * 3",
    f"max(topk(1, count_over_time({ALL}[5m])))",
    f"count(sum by (app, env) (count_over_time({ALL}[5m])))",
    # an empty-valued label (`nope`) the reference's frontend merge drops, or (summed whole) keeps
    f"count_over_time({ALL} | logfmt nope | drop pod [5m])",
    'sum by (nope, env) (max_over_time({app="checkout"} | logfmt nope, duration | drop pod '
    '| unwrap duration(duration) | __error__="" [10m]))',
]
LOG_QUERIES = [
    '{namespace="shop"}',
    f"{ALL} | drop pod, cluster, level, env, namespace",
    f"{ALL} | keep app",
    '{app="nginx"} |= "GET"',
    '{app="checkout"} | logfmt | duration > 1s',
]
# Answers that depend on the order a source yields streams in, when values or timestamps
# tie (the reference leaves that order open too): compared up to the choice among ties.
TIES = {
    f"topk(2, count_over_time({ALL}[5m]))",
    'bottomk by (app) (1, count_over_time({namespace="shop"}[5m]))',
    f"max(topk(1, count_over_time({ALL}[5m])))",
    f"{ALL} | drop pod, cluster, level, env, namespace",
    f"{ALL} | keep app",
}
RANGE = QueryParams.for_range(W, W + 7200 * NS, 60 * NS)
COARSE = QueryParams.for_range(W - 1800 * NS, W + 7200 * NS + 1, 900 * NS)
INSTANT = QueryParams.for_instant(W + 3600 * NS)
FAST_PLANS = [(0, 3), (600 * NS, 2)]
FULL_PLANS = [(600 * NS, 1), (3600 * NS, 4), (420 * NS, 4), (0, 2)]


def check(
    text: str,
    params: QueryParams,
    sources,
    tenants: tuple[str, ...] = ("acme",),
    plans: list[tuple[int, int]] = FAST_PLANS,
) -> None:
    expr = parse(text)
    source = source_for(sources, tenants)
    want = unsplit(expr, params, source)
    for interval, shards in plans:
        got = planned(expr, params, source, interval, shards)
        if text in TIES:
            forward = params.direction == "forward"
            assert up_to_ties(want, params.limit, forward) == up_to_ties(got, params.limit, forward), (
                f"split {interval // NS}s x {shards} shards (up to ties)"
            )
            continue
        diff = differences(want, got)
        assert not diff, f"split {interval // NS}s x {shards} shards: {diff[:3]}"


@pytest.mark.parametrize("text", METRIC_QUERIES)
@pytest.mark.parametrize("params", [RANGE, COARSE, INSTANT], ids=["range", "coarse", "instant"])
def test_metric(text: str, params: QueryParams, tenant_sources) -> None:
    check(text, params, tenant_sources)


@pytest.mark.parametrize("text", LOG_QUERIES)
@pytest.mark.parametrize("direction", ["backward", "forward"])
@pytest.mark.parametrize("limit", [7, 1000])
def test_logs(text: str, direction: str, limit: int, tenant_sources) -> None:
    params = QueryParams.for_range(W, W + 7200 * NS, limit=limit, direction=direction)
    check(text, params, tenant_sources)


@pytest.mark.slow
@pytest.mark.parametrize("text", METRIC_QUERIES)
@pytest.mark.parametrize("params", [RANGE, COARSE, INSTANT], ids=["range", "coarse", "instant"])
def test_metric_all_plans(text: str, params: QueryParams, tenant_sources) -> None:
    check(text, params, tenant_sources, plans=FULL_PLANS)


@pytest.mark.slow
@pytest.mark.parametrize("text", LOG_QUERIES)
@pytest.mark.parametrize("direction", ["backward", "forward"])
@pytest.mark.parametrize("limit", [1000, 20000])
def test_logs_all_plans(text: str, direction: str, limit: int, tenant_sources) -> None:
    params = QueryParams.for_range(W, W + 7200 * NS, limit=limit, direction=direction)
    check(text, params, tenant_sources, plans=FULL_PLANS)


@pytest.mark.parametrize("interval", [30 * NS, 7 * NS])
def test_logs_with_interval(interval: int, tenant_sources) -> None:
    params = QueryParams.for_range(W, W + 7200 * NS, interval=interval, limit=500, direction="forward")
    check('{namespace="shop"}', params, tenant_sources)


def test_multi_tenant(tenant_sources) -> None:
    check(
        '{app="api"} | drop __tenant_id__',
        QueryParams.for_range(W, W + 7200 * NS, limit=300),
        tenant_sources,
        ("acme", "globex"),
    )
    check(
        'sum by (__tenant_id__, app) (rate({app=~"api|nginx"}[5m]))',
        RANGE,
        tenant_sources,
        ("acme", "globex", "initech"),
    )


def test_series_limit_applies_to_the_merged_answer(tenant_sources) -> None:
    from svclog.logql.rewrite import evaluate_subquery, plan_query
    from svclog.model import LimitError

    expr = parse(f"count_over_time({ALL}[5m])")
    plan = plan_query(expr, RANGE, split_interval_ns=3600 * NS, shards=4, max_series=3)
    partials = [evaluate_subquery(sub, tenant_sources["acme"]) for sub in plan.subqueries]
    with pytest.raises(LimitError, match=r"maximum number of series \(3\)"):
        plan.merge(partials)
