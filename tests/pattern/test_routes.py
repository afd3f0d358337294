"""The patterns route over ASGI with a fake pattern actor (no Ray)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from svclog.actors.service_clients import PatternClient
from svclog.logql.engine.guard import QueryLimits
from svclog.model import NS
from svclog.pattern import PatternIngester
from svclog.serve.app import Services
from tests.fuzz.harness import app_with
from tests.pattern.test_ingester import T0, stream

CASES = Path("/work/shared/conformance/cases/patterns")


class _Method:
    def __init__(self, fn):
        self.fn = fn
        self.calls: list[tuple] = []

    def remote(self, *args):
        self.calls.append(args)
        future = asyncio.get_running_loop().create_future()
        future.set_result(self.fn(*args))
        return future


class FakeActor:
    """Looks like a Ray actor handle: `await actor.patterns.remote(...)`."""

    def __init__(self, ingester: PatternIngester):
        def patterns(tenant, matchers, start, end, step, limits=None):  # as PatternActor.patterns
            return ingester.patterns(tenant, matchers, start, end, step, (limits or QueryLimits()).guard())

        self.patterns = _Method(patterns)


@pytest.fixture
def actor():
    ing = PatternIngester()
    ing.push("acme", [stream({"app": "api"}, [(T0 + i * NS, f"user u{i} logged in") for i in range(12)])])
    ing.push("globex", [stream({"app": "api"}, [(T0, "globex only")])])
    return FakeActor(ing)


def call(app: FastAPI, path: str, params: dict | list, headers: dict | None = None) -> httpx.Response:
    async def go():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.get(path, params=params, headers=headers or {})

    return asyncio.run(go())


def make_app(actor, auth_enabled: bool = True) -> FastAPI:
    patterns = PatternClient(actor) if actor else None
    return app_with(Services(patterns=patterns), auth_enabled=auth_enabled, pattern_ingester_enabled=actor is not None)


@pytest.mark.parametrize("prefix", ["/svc", "/loki"])
def test_patterns_response(actor, prefix):
    params = {"query": '{app="api"}', "start": str(T0), "end": str(T0 + 3600 * NS), "step": "1m"}
    resp = call(make_app(actor), prefix + "/api/v1/patterns", params, {"X-Scope-OrgID": "acme"})
    assert resp.status_code == 200
    assert resp.json() == {
        "status": "success",
        "data": [{"pattern": "user <_> logged in", "samples": [[T0 // NS, 12]]}],
    }
    tenant, matchers, start, end, step, _limits = actor.patterns.calls[-1]
    assert (tenant, start, end, step) == ("acme", T0, T0 + 3600 * NS, 60 * NS)
    assert [str(m) for m in matchers] == ['app="api"']


def test_default_step_and_single_tenant_mode(actor):
    params = {"query": '{app="api"}', "start": str(T0), "end": str(T0 + 2500 * NS)}
    resp = call(make_app(actor, auth_enabled=False), "/svc/api/v1/patterns", params)
    assert resp.status_code == 200 and resp.json()["data"] == []  # tenant "fake" has nothing
    assert actor.patterns.calls[-1][0] == "fake" and actor.patterns.calls[-1][4] == 10 * NS


@pytest.mark.parametrize(
    "params,headers,status",
    [
        ({"start": str(T0), "end": str(T0 + NS)}, {"X-Scope-OrgID": "acme"}, 400),  # no query
        ({"query": "{app=", "start": str(T0)}, {"X-Scope-OrgID": "acme"}, 400),  # bad selector
        ({"query": '{app="api"}', "step": "bogus"}, {"X-Scope-OrgID": "acme"}, 400),
        ({"query": '{app="api"}', "start": str(T0 + NS), "end": str(T0)}, {"X-Scope-OrgID": "acme"}, 400),
        ({"query": '{app="api"}'}, {"X-Scope-OrgID": "acme|globex"}, 400),  # several tenants
        ({"query": '{app="api"}'}, {}, 401),  # no tenant
    ],
)
def test_bad_requests(actor, params, headers, status):
    resp = call(make_app(actor), "/svc/api/v1/patterns", params, headers)
    assert resp.status_code == status
    assert resp.text.strip()


def test_disabled_pattern_ingester_answers_404():
    resp = call(make_app(None), "/svc/api/v1/patterns", {"query": '{app="api"}'}, {"X-Scope-OrgID": "acme"})
    assert resp.status_code == 404
    assert "pattern_ingester.enabled" in resp.text


def test_the_gateway_has_no_pattern_actor_when_disabled(actor):
    """pattern_ingester.enabled false (the default): 404 even with a pattern client at hand."""
    app = app_with(Services(patterns=PatternClient(actor)))
    resp = call(app, "/svc/api/v1/patterns", {"query": '{app="api"}'}, {"X-Scope-OrgID": "acme"})
    assert resp.status_code == 404 and "pattern_ingester.enabled" in resp.text


def test_conformance_cases(actor):
    cases = sorted(CASES.glob("*.json"))
    if not cases:
        pytest.skip("conformance cases not available")
    for path in cases:
        case = json.loads(path.read_text())
        resp = call(make_app(actor), case["path"], case["params"], case["headers"])
        assert resp.status_code == case["expect"]["status"], case["name"]
        if case["expect"].get("nonempty"):
            assert resp.content.strip(), case["name"]
