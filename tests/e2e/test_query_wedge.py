"""End to end: one heavy query no longer wedges the query path (issue 17).

The outside tester's wedge: a `{env=~".+"} | logfmt` log query with limit=100000 over data where
every line becomes its own stream timed out, its abandoned copies kept every querier slot busy and
every later query of every tenant answered 504 until a restart. Here the heavy tenant has a 1 s
query_timeout (runtime overrides file): four such queries at once must answer 504 naming that
timeout after about a second, the queriers must drop the abandoned work at once, another
tenant's query must then answer in its normal time, and the queriers' memory must fall back
towards what it was before the heavy queries.
"""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest
import ray

from tests.e2e.runtime_overrides import add_overrides, push_streams

pytestmark = pytest.mark.ray
NS = 10**9
HEAVY, LIGHT = "wedge-heavy", "wedge-light"
LINES = 100_000


def _scheduler():
    from svclog.actors.registry import named_actor
    from svclog.actors.scheduler_actor import SCHEDULER_NAME

    return named_actor(SCHEDULER_NAME)


def _query(svc, tenant: str, query: str, start: int, end: int, limit: int) -> tuple[int, str, float]:
    began = time.perf_counter()
    resp = httpx.get(
        svc.url + "/loki/api/v1/query_range",
        headers={"X-Scope-OrgID": tenant},
        timeout=120,
        params={"query": query, "start": str(start), "end": str(end), "limit": str(limit)},
    )
    return resp.status_code, resp.text, time.perf_counter() - began


def _querier_rss(svc) -> int:
    """Resident bytes of the querier processes together (same machine: /proc)."""
    total = 0
    for pid in ray.get([q.pid.remote() for q in svc.handles["queriers"]], timeout=30):
        with open(f"/proc/{pid}/status") as f:
            total += next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
    return total


def _running(svc) -> tuple[int, list[list[int]]]:
    stats = ray.get(_scheduler().stats.remote(), timeout=30)
    per_querier = ray.get([q.running_tickets.remote() for q in svc.handles["queriers"]], timeout=30)
    return stats.running, per_querier


def _in_flight(svc) -> int:
    """Work the queriers run now: sub-queries and direct (metadata) calls, all queriers together."""
    counts = ray.get([q.in_flight.remote() for q in svc.handles["queriers"]], timeout=30)
    return sum(c["subqueries"] + c["calls"] for c in counts)


def _wait_idle(svc, seconds: float) -> float | None:
    """Seconds until no querier runs anything and the scheduler holds no running ticket; None if never."""
    began = time.time()
    while time.time() < began + seconds:
        if _running(svc)[0] == 0 and _in_flight(svc) == 0:
            return time.time() - began
        time.sleep(0.1)
    return None


@pytest.fixture(scope="module")
def heavy(svc) -> tuple[int, int]:
    """LINES lines over the last half hour of HEAVY, each with its own trace_id: after `| logfmt`
    every line is its own stream. Returns the query range."""
    now = time.time_ns()
    start = now - 1800 * NS
    gap = 1800 * NS // LINES
    for env in range(4):
        rows = range(env, LINES, 4)
        push_streams(
            svc,
            HEAVY,
            [
                {
                    "stream": {"env": f"e{env}", "app": "wedge"},
                    "values": [[str(start + i * gap), f'level=info trace_id=t{i} msg="req {i}" n={i}'] for i in rows],
                }
            ],
        )
    return start - NS, now + NS


def test_a_heavy_query_times_out_alone_and_frees_the_queriers(svc, heavy):
    add_overrides(svc, {HEAVY: {"query_timeout": "1s"}})
    start, end = heavy
    now = time.time_ns()
    push_streams(
        svc, LIGHT, [{"stream": {"app": "light"}, "values": [[str(now - i * NS), f"light {i}"] for i in range(50)]}]
    )

    def light() -> tuple[int, str, float]:
        return _query(svc, LIGHT, '{app="light"}', now - 3600 * NS, now + NS, 100)

    status, body, normal = light()
    assert status == 200 and len(json.loads(body)["data"]["result"][0]["values"]) == 50, body
    idle = _querier_rss(svc)

    heavy: list[tuple[int, str, float]] = []
    threads = [
        threading.Thread(target=lambda: heavy.append(_query(svc, HEAVY, '{env=~".+"} | logfmt', start, end, 100_000)))
        for _ in range(4)
    ]
    busy: list[int] = []  # querier slots seen running heavy work while the queries were in flight
    for t in threads:
        t.start()
    peak = idle
    while any(t.is_alive() for t in threads):
        busy.append(sum(len(r) for r in _running(svc)[1]))
        peak = max(peak, _querier_rss(svc))
        time.sleep(0.1)
    for t in threads:
        t.join(timeout=120)
    assert len(heavy) == 4
    assert max(busy) > 0, "the heavy queries never reached a querier"
    for status, body, took in heavy:
        assert status == 504, (status, body[:200])
        assert "timed out after 1s (query_timeout)" in body, body
        assert took < 8, f"the 1 s timeout answered after {took:.1f}s"
    print(
        f"\nheavy: {[round(h[2], 2) for h in heavy]} s, up to {max(busy)} querier slots busy; "
        f"light before: {normal:.3f} s"
    )

    # the abandoned sub-queries stop at the queriers' next check: no slot stays busy with them
    began = time.time()
    while time.time() < began + 5:
        running, per_querier = _running(svc)
        if running == 0 and not any(per_querier):
            print(f"queriers free {time.time() - began:.2f} s after the last 504")
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"abandoned work still runs 5 s after the timeouts: scheduler {running}, queriers {per_querier}")

    # and another tenant answers in its normal time (the wedge made it 504 for good)
    status, body, took = light()
    assert status == 200, body
    assert took < max(2.0, 5 * normal), f"light query took {took:.2f}s after the heavy ones (normal {normal:.3f}s)"

    # and the abandoned work's memory is freed: the queriers fall back to at most half of what the
    # heavy queries added (allocators keep some pages a while; the wedge kept it all for good)
    mib = 1 << 20
    began, after = time.time(), _querier_rss(svc)
    while time.time() < began + 10 and after > idle + (peak - idle) / 2 + 64 * mib:
        time.sleep(0.5)
        after = _querier_rss(svc)
    print(f"querier RSS: idle {idle / mib:.0f} MiB, peak {peak / mib:.0f} MiB, after {after / mib:.0f} MiB")
    assert after <= idle + (peak - idle) / 2 + 64 * mib, (idle, peak, after)


def test_a_client_that_disconnects_stops_its_query_everywhere(svc, heavy):
    """No timeout fires here (60 s): the client giving up alone must stop the work in the queriers
    (and their ingester selects), free their memory, and leave another tenant's query its normal time."""
    tenant, other = HEAVY, "wedge-light-2"
    add_overrides(svc, {tenant: {"query_timeout": "60s"}})
    start, end = heavy
    now = time.time_ns()
    push_streams(
        svc, other, [{"stream": {"app": "light"}, "values": [[str(now - i * NS), f"l {i}"] for i in range(50)]}]
    )
    light = lambda: _query(svc, other, '{app="light"}', now - 3600 * NS, now + NS, 100)  # noqa: E731
    status, body, normal = light()
    assert status == 200, body
    assert _wait_idle(svc, 30) is not None, "queriers busy before the test began"
    idle = _querier_rss(svc)

    params = {"query": '{env=~".+"} | logfmt | n > 1', "start": str(start), "end": str(end), "limit": "100000"}
    peak = [idle]

    def sample_memory() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _querier_rss(svc))
            time.sleep(0.1)

    stop = threading.Event()
    sampler = threading.Thread(target=sample_memory, daemon=True)
    sampler.start()
    with pytest.raises(httpx.TimeoutException):
        httpx.get(svc.url + "/loki/api/v1/query_range", headers={"X-Scope-OrgID": tenant}, timeout=1.5, params=params)
    left = time.time()
    busy = _in_flight(svc)
    assert busy > 0, "the query was no longer running when its client left"

    # another tenant's query answers in its normal time while the abandoned work is stopped
    status, body, took = light()
    assert status == 200 and len(json.loads(body)["data"]["result"][0]["values"]) == 50, body
    assert took < max(2.0, 5 * normal), f"light query took {took:.2f}s after the disconnect (normal {normal:.3f}s)"

    if _wait_idle(svc, 10) is None:
        stop.set()
        pytest.fail(
            f"work of a disconnected client still runs 10 s later: {_running(svc)}, in flight {_in_flight(svc)}"
        )
    freed = time.time() - left
    stop.set()
    sampler.join(5)
    mib = 1 << 20
    began, after = time.time(), _querier_rss(svc)
    while time.time() < began + 10 and after > idle + (peak[0] - idle) / 2 + 64 * mib:
        time.sleep(0.5)
        after = _querier_rss(svc)
    # the same query left alone takes longer than its cancelled copy took to stop
    status, body, whole = _query(svc, tenant, params["query"], start, end, 100_000)
    assert status == 200, body[:200]
    print(
        f"\n{busy} querier slots busy when the client left, idle {freed:.2f} s later; the whole query takes "
        f"{whole:.2f} s; light query {took:.3f} s (normal {normal:.3f} s); querier RSS idle {idle / mib:.0f} MiB, "
        f"peak {peak[0] / mib:.0f} MiB, after {after / mib:.0f} MiB"
    )
    assert freed < 5 and freed < whole
    assert after <= idle + (peak[0] - idle) / 2 + 64 * mib, (idle, peak[0], after)


def test_a_metadata_request_past_its_deadline_is_a_504_and_leaves_no_work(svc, heavy):
    """Series, labels, label values, index stats and volume carry the query deadline to the querier:
    past it the answer is a 504 naming query_timeout and the querier runs nothing of it any more."""
    tenant = "wedge-meta"
    now = time.time_ns()
    push_streams(svc, tenant, [{"stream": {"app": "m"}, "values": [[str(now - i * NS), f"m {i}"] for i in range(10)]}])
    window = {"start": str(now - 3600 * NS), "end": str(now + NS)}
    routes = {
        "series": ("/loki/api/v1/series", {"match[]": '{app="m"}'}),
        "labels": ("/loki/api/v1/labels", {}),
        "label values": ("/loki/api/v1/label/app/values", {}),
        "index stats": ("/loki/api/v1/index/stats", {"query": '{app="m"}'}),
        "volume": ("/loki/api/v1/index/volume", {"query": '{app="m"}'}),
    }
    for name, (path, params) in routes.items():  # answered under a normal deadline
        resp = httpx.get(svc.url + path, headers={"X-Scope-OrgID": tenant}, params={**window, **params}, timeout=30)
        assert resp.status_code == 200, (name, resp.text)
    add_overrides(svc, {tenant: {"query_timeout": "1ms"}})
    for name, (path, params) in routes.items():
        resp = httpx.get(svc.url + path, headers={"X-Scope-OrgID": tenant}, params={**window, **params}, timeout=30)
        assert resp.status_code == 504 and "(query_timeout)" in resp.text, (name, resp.status_code, resp.text)
    assert _wait_idle(svc, 5) is not None, f"metadata work still runs: in flight {_in_flight(svc)}"
