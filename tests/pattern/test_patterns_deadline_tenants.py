"""Patterns read like the other metadata routes (issues 12 and 17): several tenants answer
together (their patterns merged, as the reference's multi-tenant querier merges them) and the
read has the query's deadline (the strictest tenant's query_timeout, then a 504 naming it),
with the pattern ingester's call cancelled when the wait ends."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from svclog.actors.service_clients import PatternClient
from svclog.logql.engine.guard import QueryLimits, QueryTimedOut
from svclog.model import NS
from svclog.pattern import PatternIngester
from svclog.pattern.ingester import merge_tenants
from svclog.serve.app import Services
from tests.fuzz.harness import app_with
from tests.pattern.test_ingester import T0, stream
from tests.pattern.test_routes import FakeActor

QUERY = {"query": '{app="api"}', "start": str(T0), "end": str(T0 + 3600 * NS), "step": "1m"}


def get(app, params, tenant: str) -> httpx.Response:
    async def go():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.get("/loki/api/v1/patterns", params=params, headers={"X-Scope-OrgID": tenant})

    return asyncio.run(go())


def multi_tenant_app(actor, *flags: str):
    return app_with(
        Services(patterns=PatternClient(actor)),
        "-querier.multi-tenant-queries-enabled=true",
        *flags,
        auth_enabled=True,
        pattern_ingester_enabled=True,
    )


@pytest.fixture
def actor():
    ing = PatternIngester()
    ing.push("acme", [stream({"app": "api"}, [(T0 + i * NS, f"user u{i} logged in") for i in range(3)])])
    ing.push("globex", [stream({"app": "api"}, [(T0 + 120 * NS + i * NS, f"user g{i} logged in") for i in range(5)])])
    ing.push("globex", [stream({"app": "api"}, [(T0, "globex only")])])
    return FakeActor(ing)


def test_several_tenants_answer_their_patterns_merged(actor):
    resp = get(multi_tenant_app(actor), QUERY, "acme|globex")
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"] == [
        {"pattern": "user <_> logged in", "samples": [[T0 // NS, 3], [T0 // NS + 120, 5]]},
        {"pattern": "globex only", "samples": [[T0 // NS, 1]]},
    ]
    assert sorted(call[0] for call in actor.patterns.calls) == ["acme", "globex"]


def test_an_empty_tenant_part_reads_like_the_reference(actor):
    resp = get(multi_tenant_app(actor), QUERY, "nobody|")
    assert (resp.status_code, resp.json()) == (200, {"status": "success", "data": []})


def test_merge_keeps_equal_times_apart_and_orders_by_time():
    a = [{"pattern": "p", "samples": [[20, 1], [10, 2]]}]
    b = [{"pattern": "p", "samples": [[10, 4]]}, {"pattern": "q", "samples": [[5, 1]]}]
    assert merge_tenants([a, b]) == [
        {"pattern": "p", "samples": [[10, 2], [10, 4], [20, 1]]},
        {"pattern": "q", "samples": [[5, 1]]},
    ]
    assert merge_tenants([a]) is a


class _Slow:
    """A pattern actor whose call answers after `delay_s`; records its arguments and cancellation."""

    def __init__(self, delay_s: float):
        self.delay_s = delay_s
        self.calls: list[tuple] = []
        self.cancelled = 0
        outer = self

        class _Method:
            def remote(self, *args):
                outer.calls.append(args)

                async def answer():
                    try:
                        await asyncio.sleep(outer.delay_s)
                    except asyncio.CancelledError:
                        outer.cancelled += 1
                        raise
                    return []

                return answer()

        self.patterns = _Method()


def test_a_slow_pattern_read_answers_504_at_the_query_timeout():
    slow = _Slow(delay_s=5)
    began = time.perf_counter()
    resp = get(multi_tenant_app(slow, "-querier.query-timeout=300ms"), QUERY, "acme")
    took = time.perf_counter() - began
    assert resp.status_code == 504, resp.text
    assert "timed out after 300ms (query_timeout)" in resp.text
    assert 0.25 < took < 2, took
    assert slow.cancelled == 1  # the pattern ingester's call was cancelled, not left running
    limits = slow.calls[0][5]
    assert isinstance(limits, QueryLimits) and limits.timeout_ns == 300_000_000 and limits.deadline is not None


def test_the_strictest_tenant_timeout_applies_and_a_fast_read_answers(actor):
    resp = get(multi_tenant_app(actor, "-querier.query-timeout=2s"), QUERY, "acme")
    assert resp.status_code == 200
    assert actor.patterns.calls[-1][5].timeout_ns == 2 * NS


def test_the_pattern_ingester_stops_at_the_deadline():
    ing = PatternIngester()
    ing.push("acme", [stream({"app": "api"}, [(T0, "line one")])])
    expired = QueryLimits(deadline=time.time() - 1, timeout_ns=NS)
    with pytest.raises(QueryTimedOut, match=r"after 1s \(query_timeout\)"):
        ing.patterns("acme", [], T0, T0 + NS, NS, expired.guard())
