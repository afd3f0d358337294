"""End to end: an index gateway joins the shared (`-target=all`) service, whose queriers then send their
index lookups to it; its ring page lists it with forget, and without a healthy gateway queriers read locally."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.e2e.runtime_overrides import add_overrides

pytestmark = pytest.mark.ray
BASE = 1_793_491_200 * 10**9  # 2026-11-01T00:00:00Z
TENANT = "e2e-indexgateway"
PAGE = "/indexgateway/ring"


def _members(svc) -> dict[str, dict]:
    resp = httpx.get(svc.url + PAGE, headers={"Accept": "application/json"}, timeout=30)
    assert resp.status_code == 200, resp.text
    return {m["id"]: m for m in resp.json()["members"]}


def _querier_lookups(svc) -> list[dict]:
    import ray

    from svclog.actors.options import NAMESPACE, querier_name

    return ray.get(
        [
            ray.get_actor(querier_name(i), namespace=NAMESPACE).index_lookups.remote()
            for i in range(svc.cfg.ray.num_queriers)
        ],
        timeout=60,
    )


def _wait_until(check, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.5)


def _lines(svc, query: str) -> list[str]:
    resp = httpx.get(
        svc.url + "/loki/api/v1/query_range",
        headers={"X-Scope-OrgID": TENANT},
        timeout=60,
        params={"query": query, "start": str(BASE), "end": str(BASE + 3600 * 10**9)},
    )
    assert resp.status_code == 200, resp.text
    return sorted(v[1] for stream in resp.json()["data"]["result"] for v in stream["values"])


@pytest.fixture(scope="module")
def gateway(svc):
    import ray

    from svclog import launch

    assert _members(svc) == {}  # `-target=all` runs no index gateway
    handles = launch.start_index_gateways(svc.cfg)
    ray.get([h.ready.remote() for h in handles], timeout=60)
    yield handles[1]
    launch._kill(handles[1:] + handles[:1])


def test_queries_go_through_the_index_gateway(svc, gateway):
    import ray

    _wait_until(
        lambda: all(q["gateways"] == ["index-gateway-0"] for q in _querier_lookups(svc)),
        "queriers did not pick up the index gateway ring",
    )
    member = _members(svc)["index-gateway-0"]
    assert (member["state"], member["health"]) == ("ACTIVE", "healthy") and member["tokens"] > 0
    assert 'name="forget"' in httpx.get(svc.url + PAGE, timeout=30).text

    # the queriers' lookups are what this test follows: no query of its tenant in the frontend's local lane
    add_overrides(svc, {TENANT: {"local_query_max_bytes": 0}})
    lines = [f"indexed line {i}" for i in range(5)]
    body = {"streams": [{"stream": {"app": "igw"}, "values": [[str(BASE + i), line] for i, line in enumerate(lines)]}]}
    assert (
        httpx.post(svc.url + "/loki/api/v1/push", json=body, headers={"X-Scope-OrgID": TENANT}, timeout=30).status_code
        == 204
    )
    assert httpx.post(svc.url + "/flush", timeout=120).status_code == 204
    before = ray.get(gateway.stats.remote(), timeout=30)
    remote_before = sum(q["remote_lookups"] for q in _querier_lookups(svc))
    assert _lines(svc, '{app="igw"}') == lines
    labels = httpx.get(
        svc.url + "/loki/api/v1/labels",
        headers={"X-Scope-OrgID": TENANT},
        timeout=30,
        params={"start": str(BASE), "end": str(BASE + 3600 * 10**9)},
    )
    assert labels.status_code == 200 and "app" in labels.json()["data"]
    after = ray.get(gateway.stats.remote(), timeout=30)
    assert after["lookups"]["chunk_refs"] > before["lookups"]["chunk_refs"]
    assert after["lookups"]["series"] > before["lookups"]["series"]
    assert after["segments_read"] >= 1 and after["tenants"] >= 1
    assert sum(q["remote_lookups"] for q in _querier_lookups(svc)) > remote_before

    # forgotten (until its next heartbeat): the queriers read the index themselves, with the same answer
    assert httpx.post(svc.url + PAGE, data={"forget": "index-gateway-0"}, timeout=30).status_code < 400
    assert "index-gateway-0" not in _members(svc)
    _wait_until(lambda: all(q["gateways"] == [] for q in _querier_lookups(svc)), "queriers still use the gateway")
    local_before = sum(q["local_lookups"] for q in _querier_lookups(svc))
    assert _lines(svc, '{app="igw"} |= "indexed"') == lines
    assert sum(q["local_lookups"] for q in _querier_lookups(svc)) > local_before
