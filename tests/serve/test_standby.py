"""While svclog starts or stops every route answers 503 with Retry-After (the standby app), never 404."""

import asyncio

import httpx
import pytest
from starlette.testclient import TestClient, WebSocketDenialResponse

from svclog.config import default_config
from svclog.serve.routes import http_routes
from svclog.serve.standby import GATEWAY_DEPLOYMENT, StandbyApp, standby_application


def _paths() -> list[tuple[str, str]]:
    out = [(methods[0], path.replace("{name}", "app").replace("{rest:path}", "ns")) for methods, path in http_routes()]
    return out + [("GET", "/no/such/route")]


@pytest.mark.parametrize("state", ["starting", "stopping"])
def test_every_route_answers_503_with_retry_after(state):
    async def run():
        transport = httpx.ASGITransport(app=StandbyApp(state))
        async with httpx.AsyncClient(transport=transport, base_url="http://svclog") as client:
            for method, path in _paths():
                resp = await client.request(method, path, content=b"{}")
                assert resp.status_code == 503, (method, path)
                assert resp.headers["retry-after"] == "1"
                assert state in resp.text

    asyncio.run(run())


def test_a_tail_websocket_is_denied_with_503():
    with pytest.raises(WebSocketDenialResponse) as denied:
        with TestClient(StandbyApp("starting")).websocket_connect("/loki/api/v1/tail?query={a=%22b%22}"):
            pass
    assert denied.value.status_code == 503 and denied.value.headers["retry-after"] == "1"


def test_the_standby_replaces_the_gateway_deployment_in_place():
    """Same ingress deployment name: Serve updates it in place and the route never disappears."""
    from svclog.serve.deployments import build_application

    assert build_application(default_config(), 1)._bound_deployment.name == GATEWAY_DEPLOYMENT
    standby = standby_application("starting")._bound_deployment
    assert standby.name == GATEWAY_DEPLOYMENT
    assert standby.ray_actor_options["num_cpus"] == 0


def test_launch_opens_with_the_standby_and_stops_by_swapping_it_back(monkeypatch):
    """start deploys the standby before any actor; stop swaps it in instead of deleting the app."""
    from svclog import launch

    calls = []

    class FakeServe:
        def start(self, **kwargs):
            calls.append(("start",))

        def run(self, app, name, route_prefix, blocking):
            calls.append(("run", app._bound_deployment.func_or_class.__name__, name, route_prefix))

        def delete(self, name):
            calls.append(("delete", name))

    monkeypatch.setattr(launch, "ray_serve", FakeServe)
    launch.open_http(default_config(), "svclog", "/")
    assert calls[0] == ("start",) and calls[1][2:] == ("svclog", "/")
    calls.clear()
    launch.close_http("svclog", "/")
    assert [c[0] for c in calls] == ["run"] and calls[0][2:] == ("svclog", "/")
