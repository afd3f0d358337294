"""What a query reads once the token index has ruled chunks out, known at planning: a needle's
selectors read little, a common word's or an unfiltered selector's read what the index says."""

from __future__ import annotations

import hashlib

import pytest

from svclog.frontend.budgets import read_windows, window_filters
from svclog.frontend.frontend import FrontendSettings, QueryFrontend
from svclog.logql.parser import parse
from svclog.model import Entry, Labels, PushStream
from svclog.querier.request import RangeRequest
from tests.fuzz.harness import InProcessBackend, harness_config

NS = 10**9
HOUR = 3600 * NS
T0 = 1_793_491_200 * NS
LOOKBACK = 30 * NS


def _id(pod: int, n: int) -> str:
    return hashlib.sha1(f"{pod}/{n}".encode()).hexdigest()


@pytest.fixture
def backend(tmp_path):
    """Four streams of 2000 lines over 40 minutes, each line with a trace id of its own, flushed."""
    backend = InProcessBackend(harness_config(str(tmp_path), "-limits.reject-old-samples=false"), str(tmp_path))
    backend.distributor.push(
        "acme",
        [
            PushStream(
                Labels((("app", "probe"), ("pod", f"p{pod}"))),
                [Entry(T0 + n * NS, f"level=info pod=p{pod} trace_id={_id(pod, n)} took=5ms") for n in range(2000)],
            )
            for pod in range(4)
        ],
    )
    for ingester in backend.ingesters.values():
        ingester.flush_all()
    return backend


def _reads(backend, query: str):
    frontend = QueryFrontend(FrontendSettings(split_queries_by_interval=HOUR))
    plan = frontend.plan(RangeRequest(query, T0, T0 + HOUR, 60 * NS, None, 100, "backward"))
    windows = read_windows(parse(query), T0, T0 + HOUR, LOOKBACK)
    filters = window_filters(plan, windows, LOOKBACK)
    return backend.querier.read_facts(["acme"], None, windows, None, 0, 0, filters).reads


def test_a_needle_reads_only_the_chunks_the_token_index_leaves(backend):
    [plain] = _reads(backend, '{app="probe"}')
    assert plain.bytes > 0 and plain.probed_bytes == plain.bytes
    [common] = _reads(backend, '{app="probe"} |= "level=info pod="')
    assert common.probed_bytes == common.bytes == plain.bytes  # too short to decide anything
    [needle] = _reads(backend, f'{{app="probe"}} |= "{_id(2, 1234)}"')
    assert (needle.chunks, needle.bytes) == (plain.chunks, plain.bytes)  # the budgets' figures
    assert 0 < needle.probed_bytes <= plain.bytes // 4  # one stream's chunk holds it
    [absent] = _reads(backend, f'{{app="probe"}} |= "{_id(9, 0)}"')
    assert absent.probed_bytes == 0
    # a metric query's selector too, its window as the budgets see it
    [metric] = _reads(backend, f'count_over_time({{app="probe"}} |= "{_id(9, 0)}" [5m])')
    assert metric.probed_bytes == 0 and metric.bytes == plain.bytes


def test_selectors_reading_one_window_with_different_filters_count_whole(backend):
    query = f'count_over_time({{app="probe"}} |= "{_id(9, 0)}" [5m]) / count_over_time({{app="probe"}}[5m])'
    [both] = _reads(backend, query)
    assert both.probed_bytes == both.bytes > 0
