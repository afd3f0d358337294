"""Two tenants push look-alike streams; every read endpoint shows each tenant its own data only."""

from __future__ import annotations

import asyncio
import json
import time
from urllib.parse import urlencode

import httpx
import pytest
from websockets.asyncio.client import connect

pytestmark = pytest.mark.ray
NS = 10**9
N = 40
TENANTS = {"iso-alpha": "alpha", "iso-beta": "beta"}  # tenant -> its team label and line word
RULES = """
name: {team}-group
interval: 1m
rules:
  - record: iso_{team}:lines:count5m
    expr: sum(count_over_time({{app="iso"}}[5m]))
"""


def _hdr(tenant: str, **extra: str) -> dict:
    return {"X-Scope-OrgID": tenant, **extra}


def _other(tenant: str) -> str:
    return next(t for t in TENANTS if t != tenant)


def _wait(predicate, timeout=60.0, step=0.5):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return None


@pytest.fixture(scope="module")
def pushed(svc):
    start = time.time_ns() - 600 * NS
    for tenant, team in TENANTS.items():
        streams = [
            {
                "stream": {"app": "iso", "team": team, f"only_{team}": "1"},
                "values": [[str(start + i * NS), f"{team} line {i} status=200"] for i in range(N)],
            }
        ]
        resp = httpx.post(
            svc.url + "/svc/api/v1/push",
            content=json.dumps({"streams": streams}),
            timeout=60,
            headers=_hdr(tenant, **{"Content-Type": "application/json"}),
        )
        assert resp.status_code == 204, resp.text
    return start


def _get(svc, path: str, tenant: str, **params: str) -> httpx.Response:
    resp = httpx.get(svc.url + path, params=params, headers=_hdr(tenant), timeout=60)
    assert resp.status_code == 200, (path, resp.status_code, resp.text)
    return resp


def _window(start: int) -> dict:
    return {"start": str(start - NS), "end": str(start + (N + 1) * NS)}


@pytest.mark.parametrize("tenant", list(TENANTS))
def test_queries_see_only_the_own_tenant(svc, pushed, tenant):
    team, other = TENANTS[tenant], TENANTS[_other(tenant)]
    body = _get(svc, "/svc/api/v1/query_range", tenant, query='{app="iso"}', limit="1000", **_window(pushed)).json()
    streams = body["data"]["result"]
    assert [s["stream"]["team"] for s in streams] == [team]
    lines = [v[1] for s in streams for v in s["values"]]
    assert len(lines) == N and all(line.startswith(team) for line in lines)

    metric = _get(
        svc, "/svc/api/v1/query", tenant, query='sum(count_over_time({app="iso"}[1h]))', time=str(pushed + (N + 1) * NS)
    ).json()
    assert float(metric["data"]["result"][0]["value"][1]) == N
    assert other not in json.dumps(metric)


@pytest.mark.parametrize("tenant", list(TENANTS))
def test_metadata_sees_only_the_own_tenant(svc, pushed, tenant):
    team, other = TENANTS[tenant], TENANTS[_other(tenant)]
    window = _window(pushed)
    names = _get(svc, "/svc/api/v1/labels", tenant, **window).json()["data"]
    assert f"only_{team}" in names and f"only_{other}" not in names
    values = _get(svc, "/svc/api/v1/label/team/values", tenant, **window).json()["data"]
    assert values == [team]
    series = _get(svc, "/svc/api/v1/series", tenant, **{"match[]": '{app="iso"}'}, **window).json()["data"]
    assert [s["team"] for s in series] == [team]

    stats = _get(svc, "/svc/api/v1/index/stats", tenant, query='{app="iso"}', **window).json()
    assert stats["streams"] == 1 and stats["entries"] == N, stats
    # volume groups by the selector's labels: naming team shows whose streams were counted
    own_bytes = sum(len(f"{team} line {i} status=200") for i in range(N))
    volume = _get(svc, "/svc/api/v1/index/volume", tenant, query='{app="iso", team=~".+"}', **window).json()
    assert [(r["metric"]["team"], float(r["value"][1])) for r in volume["data"]["result"]] == [(team, own_bytes)]
    volume_range = _get(
        svc, "/svc/api/v1/index/volume_range", tenant, query='{app="iso", team=~".+"}', step="10", **window
    ).json()
    teams = {r["metric"]["team"] for r in volume_range["data"]["result"]}
    assert teams == {team}, volume_range


async def _tail_replay(svc, tenant: str, start: int) -> list[str]:
    url = (
        svc.url.replace("http://", "ws://", 1)
        + "/svc/api/v1/tail?"
        + urlencode({"query": '{app="iso"}', "start": str(start - NS), "limit": "1000"})
    )
    lines: list[str] = []
    async with connect(url, additional_headers=_hdr(tenant), open_timeout=60) as ws:
        while len(lines) < N:
            message = json.loads(await asyncio.wait_for(ws.recv(), 30))
            lines += [v[1] for s in message["streams"] for v in s["values"]]
    return lines


@pytest.mark.parametrize("tenant", list(TENANTS))
def test_tail_replays_only_the_own_tenant(svc, pushed, tenant):
    lines = asyncio.run(_tail_replay(svc, tenant, pushed))
    assert len(lines) == N and all(line.startswith(TENANTS[tenant]) for line in lines)


def test_rules_are_listed_per_tenant(svc):
    try:
        for tenant, team in TENANTS.items():
            resp = httpx.post(
                svc.url + "/svc/api/v1/rules/iso-ns",
                content=RULES.format(team=team),
                timeout=30,
                headers=_hdr(tenant, **{"Content-Type": "application/yaml"}),
            )
            assert resp.status_code == 202, resp.text
        for tenant, team in TENANTS.items():
            other = TENANTS[_other(tenant)]
            listing = _get(svc, "/svc/api/v1/rules", tenant).text
            assert f"{team}-group" in listing and f"{other}-group" not in listing, listing
            assert f"{team}-group" in _get(svc, "/svc/api/v1/rules/iso-ns", tenant).text
            resp = httpx.get(svc.url + f"/svc/api/v1/rules/iso-ns/{other}-group", headers=_hdr(tenant), timeout=30)
            assert resp.status_code == 404, resp.text

            def loaded(tenant=tenant, team=team):
                text = _get(svc, "/compat/api/v1/rules", tenant).text
                return text if f"{team}-group" in text else None

            compat = _wait(loaded, 60)
            assert compat and f"{other}-group" not in compat, compat
            assert other not in _get(svc, "/compat/api/v1/alerts", tenant).text
    finally:
        for tenant in TENANTS:
            httpx.delete(svc.url + "/svc/api/v1/rules/iso-ns", headers=_hdr(tenant), timeout=30)


def test_delete_requests_are_listed_per_tenant(svc, pushed):
    for tenant, team in TENANTS.items():  # selectors that match no stream: nothing of ours goes away
        resp = httpx.post(
            svc.url + "/svc/api/v1/delete",
            headers=_hdr(tenant),
            timeout=30,
            params={"query": f'{{app="iso-nothing", team="{team}"}}', "start": str(pushed // NS - 60)},
        )
        assert resp.status_code == 204, resp.text
    for tenant, team in TENANTS.items():
        listing = _get(svc, "/svc/api/v1/delete", tenant).json()
        queries = [r["query"] for r in listing]
        assert queries and all(f'team="{team}"' in q for q in queries), listing


def test_pattern_ingester_keeps_tenants_apart(svc):
    """The patterns endpoint only passes the request's tenant to the pattern ingester (and the shared
    topology runs without one): the ingester itself must keep tenants apart."""
    import ray

    from svclog.actors.options import NAMESPACE
    from svclog.actors.pattern_actor import RemotePatternIngester
    from svclog.model import Labels, Matcher, MatchType, StreamColumns

    actor = RemotePatternIngester.options(name="pattern-iso-test", namespace=NAMESPACE, num_cpus=0.01).remote(svc.cfg)
    try:
        now = time.time_ns()
        for tenant, team in TENANTS.items():
            streams = [
                StreamColumns(
                    Labels({"app": "iso"}.items()),
                    [now + i for i in range(50)],
                    [f"{team} request {i} took {i * 3}ms" for i in range(50)],
                    None,
                )
            ]
            ray.get(actor.push.remote(tenant, streams), timeout=60)
        for tenant, team in TENANTS.items():
            found = ray.get(
                actor.patterns.remote(
                    tenant, [Matcher("app", MatchType.EQ, "iso")], now - 60 * NS, now + 60 * NS, 10 * NS
                ),
                timeout=60,
            )
            text = json.dumps(found)
            assert team in text and TENANTS[_other(tenant)] not in text, found
    finally:
        ray.kill(actor, no_restart=True)
