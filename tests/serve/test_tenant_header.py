"""A request with more than one X-Scope-OrgID header is refused (400) on every route."""

import asyncio

import httpx
import pytest

from svclog.serve.app import Services
from svclog.serve.routes import http_routes
from svclog.serve.tenant_header import SingleOrgIdHeader
from tests.fuzz.harness import InProcessBackend, app_with, build_app, harness_config


def _routes() -> list[tuple[str, str]]:
    return [(methods[0], path.replace("{name}", "app").replace("{rest:path}", "ns")) for methods, path in http_routes()]


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("orgid"))
    return build_app(InProcessBackend(harness_config(root), root))


def _send(app, method, path, headers):
    async def run():
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://svclog") as client:
            return await client.request(method, path + "?query=%7Ba%3D%22b%22%7D", headers=headers, content=b"{}")

    return asyncio.run(run())


@pytest.mark.parametrize("method,path", _routes())
def test_two_org_id_headers_are_a_400_on_every_route(app, method, path):
    resp = _send(app, method, path, [(b"X-Scope-OrgID", b"victim"), (b"x-scope-orgid", b"attacker")])
    assert resp.status_code == 400, resp.text
    assert "more than one X-Scope-OrgID" in resp.text


def test_one_header_still_works(app):
    resp = _send(app, "GET", "/loki/api/v1/labels", [(b"X-Scope-OrgID", b"a|b")])
    assert resp.status_code == 200, resp.text


def test_the_tail_websocket_is_covered():
    app = app_with(Services())  # the table's tail WebSocket route; the middleware answers first

    sent = []

    async def receive():
        return {"type": "websocket.connect"}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "websocket",
        "path": "/loki/api/v1/tail",
        "raw_path": b"/loki/api/v1/tail",
        "query_string": b"",
        "root_path": "",
        "scheme": "ws",
        "server": ("svclog", 80),
        "client": ("c", 1),
        "subprotocols": [],
        "headers": [(b"x-scope-orgid", b"a"), (b"x-scope-orgid", b"b")],
        "extensions": {"websocket.http.response": {}},
        "asgi": {"version": "3.0"},
    }
    asyncio.run(app(scope, receive, send))
    assert sent[0]["type"] == "websocket.http.response.start" and sent[0]["status"] == 400
    assert any(m.cls is SingleOrgIdHeader for m in app.user_middleware)
