"""The gateway answers 404 for endpoint groups its deployment target does not expose."""

import asyncio

import httpx
import pytest

from svclog.config import load_config


@pytest.mark.parametrize(
    "target,path,method",
    [
        ("read", "/svc/api/v1/push", "POST"),
        ("read", "/otlp/v1/logs", "POST"),
        ("read", "/flush", "POST"),
        ("write", "/loki/api/v1/query_range", "GET"),
        ("write", "/svc/api/v1/rules", "GET"),
        ("write", "/svc/api/v1/delete", "GET"),
        ("backend", "/svc/api/v1/push", "POST"),
        ("querier", "/ingester/shutdown", "POST"),
    ],
)
def test_unexposed_groups_are_404(target, path, method):
    from svclog.serve.app import GatewaySettings, Services, build_app

    app = build_app(GatewaySettings.from_config(load_config(None, [f"-target={target}"])), Services())

    async def call():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://svc") as client:
            return await client.request(method, path, headers={"X-Scope-OrgID": "t"})

    response = asyncio.run(call())
    assert response.status_code == 404
    assert f"target '{target}'" in response.text


def test_a_stopping_gateway_answers_503_with_retry_after_on_every_route():
    from svclog import launch
    from svclog.serve.app import GatewaySettings, Services, build_app
    from svclog.serve.standby import StandbySwitch

    cfg = load_config(None, [])
    assert launch.single_gateway(cfg)  # the local default: the stop tells the one replica directly
    standby = StandbySwitch()
    app = build_app(GatewaySettings.from_config(cfg), Services(), standby)
    standby.enter("stopping")

    async def call(method, path):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://svc") as client:
            return await client.request(method, path, headers={"X-Scope-OrgID": "t"})

    for method, path in [("POST", "/loki/api/v1/push"), ("GET", "/ready"), ("GET", "/nope")]:
        response = asyncio.run(call(method, path))
        assert response.status_code == 503 and response.headers["retry-after"] == "1"
        assert "stopping" in response.text
    standby.leave()
    assert asyncio.run(call("GET", "/nope")).status_code == 404


def test_volume_range_with_bounds_at_the_int64_edge_is_a_400_not_a_500():
    import tempfile

    from tests.fuzz.harness import InProcessBackend, build_app, harness_config

    root = tempfile.mkdtemp()
    app = build_app(InProcessBackend(harness_config(root, "-limits.volume-enabled=true"), root))

    async def call(query):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://svc") as client:
            return await client.get("/loki/api/v1/index/volume_range?" + query, headers={"X-Scope-OrgID": "t"})

    for query in [
        "query=%7Ba%3D%22b%22%7D&start=-9223372036854775808&end=0",
        "query=%7Ba%3D%22b%22%7D&start=0&end=9223372036854775807&step=1h",
    ]:
        response = asyncio.run(call(query))
        assert response.status_code == 400, response.text
