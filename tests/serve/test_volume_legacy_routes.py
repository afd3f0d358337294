"""Volume parameter checks and per-tenant limits, and the legacy label/tail shapes, over ASGI."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import httpx

from svclog.config.limits import LimitsConfig
from svclog.serve.app import Services
from tests.fuzz.harness import app_with

VOLUME_ON = replace(LimitsConfig(), volume_enabled=True)

Q = '{app="a"}'
SERIES = [{"metric": {"app": name}, "value": [1, "1"]} for name in "abc"]


class Backend:
    def __init__(self):
        self.volume_calls = []

    async def volume(self, tenants, query, start, end, limit, targets, aggregate_by, step):
        self.volume_calls.append((tenants, limit, step))
        return {"resultType": "vector", "result": SERIES[:limit]}

    async def index_stats(self, tenants, query, start, end):
        return {"streams": 0, "chunks": 0, "entries": 0, "bytes": 0}

    async def label_names(self, tenants, start, end, query):
        return ["app", "env"]

    async def label_values(self, tenants, name, start, end, query):
        return ["a", "b"]


def get(path, params=None, tenant="t", **handler_options):
    backend = Backend()
    settings = {"limits_for": lambda tenant: VOLUME_ON, **handler_options}
    app = app_with(Services(backend=backend), auth_enabled=True, multi_tenant_queries=True, **settings)

    async def send():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svclog") as client:
            return await client.get(path, params=params or {}, headers={"X-Scope-OrgID": tenant})

    return asyncio.run(send()), backend


def test_volume_range_caps_points_as_query_range():
    # start=0&step=1 over today's end was ~1.7e9 steps (14 GB in the querier): now a 400 up front
    response, backend = get(
        "/svc/api/v1/index/volume_range", {"query": Q, "start": "0", "end": "1700000000000000000", "step": "1"}
    )
    assert response.status_code == 400 and "11,000 points" in response.text and not backend.volume_calls
    for step in ("0", "-5"):
        response, _ = get("/svc/api/v1/index/volume_range", {"query": Q, "start": "0", "end": "100", "step": step})
        assert response.status_code == 400 and "zero or negative" in response.text
    response, backend = get("/svc/api/v1/index/volume_range", {"query": Q, "start": "0", "end": "11000", "step": "1"})
    assert response.status_code == 200 and backend.volume_calls[0][2] == 10**9


def test_end_before_start_is_a_400():
    for path in ("/svc/api/v1/index/volume", "/svc/api/v1/index/volume_range", "/svc/api/v1/index/stats"):
        response, _ = get(path, {"query": Q, "start": "100", "end": "10"})
        assert response.status_code == 400, path
        assert "end timestamp must not be before" in response.text


def test_volume_enabled_per_tenant():
    limits = {"off": replace(LimitsConfig(), volume_enabled=False)}

    def limits_for(tenant):
        return limits.get(tenant, LimitsConfig())

    response, backend = get("/svc/api/v1/index/volume", {"query": Q}, tenant="off", limits_for=limits_for)
    assert response.status_code == 404 and "volume is not enabled for tenant 'off'" in response.text
    assert not backend.volume_calls
    response, _ = get("/svc/api/v1/index/volume", {"query": Q}, tenant="on", limits_for=limits_for)
    assert response.status_code == 200
    response, _ = get("/svc/api/v1/index/volume", {"query": Q}, tenant="on|off", limits_for=limits_for)
    assert response.status_code == 404  # every tenant of a multi-tenant query must allow it
    # one switch for every tenant
    response, _ = get("/svc/api/v1/index/volume", {"query": Q}, limits_for=lambda tenant: limits["off"])
    assert response.status_code == 404


def test_volume_enabled_from_runtime_overrides(tmp_path):
    from svclog.config import limits_for, load_config

    overrides = tmp_path / "overrides.yaml"
    overrides.write_text("overrides:\n  dark: {volume_enabled: false}\n  small: {volume_max_series: 2}\n")
    config = tmp_path / "config.yaml"
    config.write_text(f"runtime_config: {{file: {overrides}}}\n")
    cfg = load_config(str(config))
    response, _ = get(
        "/svc/api/v1/index/volume", {"query": Q}, tenant="dark", limits_for=lambda tenant: limits_for(cfg, tenant)
    )
    assert response.status_code == 404
    response, _ = get(
        "/svc/api/v1/index/volume", {"query": Q}, tenant="small", limits_for=lambda tenant: limits_for(cfg, tenant)
    )
    assert response.status_code == 400 and "limit: 2 series" in response.text


def test_volume_max_series():
    def small(tenant):
        return replace(LimitsConfig(), volume_max_series=2)

    response, backend = get("/svc/api/v1/index/volume", {"query": Q, "limit": "1"}, limits_for=small)
    assert response.status_code == 400
    assert "the query hit the max number of series limit (limit: 2 series)" in response.text
    assert backend.volume_calls[0][1] == 3  # asked for one past the maximum
    response, _ = get("/svc/api/v1/index/volume", {"query": Q, "limit": "2"})
    assert response.status_code == 200 and len(response.json()["data"]["result"]) == 2


def test_legacy_label_routes_answer_values():
    for path in ("/api/legacy/label", "/api/prom/label"):
        response, _ = get(path)
        assert response.status_code == 200 and response.json() == {"values": ["app", "env"]}
    for path in ("/api/legacy/label/app/values", "/api/prom/label/app/values"):
        response, _ = get(path)
        assert response.status_code == 200 and response.json() == {"values": ["a", "b"]}
    response, _ = get("/svc/api/v1/labels")
    assert response.json() == {"status": "success", "data": ["app", "env"]}


def test_tail_paths_pick_their_message_shape():
    from types import SimpleNamespace

    from starlette.testclient import TestClient

    ring = SimpleNamespace(healthy_members=list, members={})
    pool = SimpleNamespace(ring=SimpleNamespace(get=lambda: ring))

    class Replay:
        async def query(self, tenants, request, actor_path=()):
            return {"result": [{"stream": {"app": "a"}, "values": [[str(request.end - 5), "hello"]]}]}

    app = app_with(Services(backend=Replay(), ingesters=pool), auth_enabled=False)
    client = TestClient(app)
    with client.websocket_connect("/api/prom/tail?query=" + Q) as socket:
        message = socket.receive_json()
    assert message["streams"][0]["labels"] == '{app="a"}' and message["streams"][0]["entries"][0]["line"] == "hello"
    with client.websocket_connect("/loki/api/v1/tail?query=" + Q) as socket:
        message = socket.receive_json()
    assert message["streams"][0]["stream"] == {"app": "a"} and message["streams"][0]["values"][0][1] == "hello"
