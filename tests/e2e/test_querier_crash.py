"""A querier killed while it demonstrably runs sub-queries: they run again, the answers stay right."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import uuid

import httpx
import pytest
import ray

from tests.e2e.runtime_overrides import add_overrides

pytestmark = pytest.mark.ray
NS = 10**9
HOUR = 3600 * NS
TENANT = "querier-crash"
HOURS = 24
PER_STREAM = 3000


def _scheduler():
    from svclog.actors.registry import named_actor
    from svclog.actors.scheduler_actor import SCHEDULER_NAME

    return named_actor(SCHEDULER_NAME)


def _query(svc, start: int, token: str) -> tuple[int, object]:
    """A 24h range query (24 hourly splits x shards: many sub-queries), each point counting one hour;
    `token` makes the text unique so no cached sub-query answers it."""
    params = {
        "query": f'sum(count_over_time({{app="qc"}} |= "level=error" != "{token}" [1h]))',
        "start": str(start),
        "end": str(start + HOURS * HOUR),
        "step": "3600",
    }
    r = httpx.get(svc.url + "/svc/api/v1/query_range", params=params, headers={"X-Scope-OrgID": TENANT}, timeout=180)
    if r.status_code != 200:
        return r.status_code, r.text
    return 200, sum(float(v[1]) for s in r.json()["data"]["result"] for v in s["values"])


def test_kill_querier_while_it_runs_subqueries_still_answers_correctly(svc):
    # the queries must run in the queriers killed here: none in the frontend's local lane
    add_overrides(svc, {TENANT: {"local_query_max_bytes": 0}})
    start = (time.time_ns() - (HOURS + 1) * HOUR) // HOUR * HOUR
    gap = HOURS * HOUR // PER_STREAM
    streams = [
        {
            "stream": {"app": "qc", "pod": str(p)},
            "values": [
                [str(start + 1 + i * gap + p), f"line {i} level={'error' if i % 3 == 0 else 'info'}"]
                for i in range(PER_STREAM)
            ],
        }
        for p in range(8)
    ]
    resp = httpx.post(
        svc.url + "/svc/api/v1/push",
        content=json.dumps({"streams": streams}),
        timeout=60,
        headers={"X-Scope-OrgID": TENANT, "Content-Type": "application/json"},
    )
    assert resp.status_code == 204, resp.text
    expected = 8 * len(range(0, PER_STREAM, 3))
    scheduler = _scheduler()

    # an undisturbed run: the right answer
    assert _query(svc, start, uuid.uuid4().hex) == (200, expected)

    results: list[tuple[int, object]] = []
    tokens = [uuid.uuid4().hex for _ in range(4)]
    threads = [threading.Thread(target=lambda t=t: results.append(_query(svc, start, t))) for t in tokens]
    before = ray.get(scheduler.stats.remote(), timeout=60).requeued
    for t in threads:
        t.start()
    # querier-1 runs at most max_concurrent sub-queries: more running means querier-0 holds some
    slots = svc.cfg.querier.max_concurrent
    deadline = time.time() + 120
    while time.time() < deadline:
        stats = ray.get(scheduler.stats.remote(), timeout=60)
        if stats.running > slots and sum(stats.queued.values()) > 0:
            break
    else:
        pytest.fail("querier-0 never held a sub-query while work was queued")
    pid = ray.get(svc.handles["queriers"][0].pid.remote(), timeout=60)
    os.kill(pid, signal.SIGKILL)
    print(f"\nquerier-0 (pid {pid}) killed with {stats.running} sub-queries running, {stats.queued} queued")
    for t in threads:
        t.join(timeout=300)
    retried = ray.get(scheduler.stats.remote(), timeout=60).requeued - before
    results.append(_query(svc, start, uuid.uuid4().hex))  # and one after the crash
    print(f"answers: {results}; sub-queries dispatched again: {retried}")
    assert results == [(200, expected)] * (len(tokens) + 1)
    assert retried > 0, "no sub-query of the killed querier ran again"
