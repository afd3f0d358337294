"""The ruler HTTP routes over ASGI, with an in-process ruler behind a Ray-like `.remote()` shim.

Also replays the recorded conformance cases of the rules category (when the shared
suite is present) through the same app.
"""

import asyncio
import json
from pathlib import Path

import httpx
import pytest
import yaml

from svclog.actors.service_clients import RulerClient
from svclog.model import NS, SvcError
from svclog.ruler.api import RulesAPI
from svclog.ruler.ruler import Ruler, RulerSettings
from svclog.ruler.service import RulerService
from svclog.serve.app import Services
from tests.fuzz.harness import app_with

from .conftest import ALERT_BODY, RECORD_BODY

CASES = Path("/work/shared/conformance/cases/rules")


class TaskError(Exception):
    """Stands in for ray.exceptions.RayTaskError: the raised error travels as `cause`."""

    def __init__(self, cause):
        super().__init__(str(cause))
        self.cause = cause


class _Method:
    def __init__(self, func):
        self.func = func

    def remote(self, *args):
        async def run():
            try:
                return self.func(*args)
            except SvcError as err:
                raise TaskError(err) from err

        return run()


class Handle:
    """`handle.method.remote(...)` -> awaitable, like a Ray actor handle."""

    def __init__(self, target):
        self._target = target

    def __getattr__(self, name):
        return _Method(getattr(self._target, name))


class NoQueries:
    def instant(self, tenant, query, at_ns):
        return [({"app": "api"}, 2.0)]


@pytest.fixture
def service(rule_store):
    ruler = Ruler(rule_store, NoQueries(), RulerSettings())
    return RulerService(RulesAPI(rule_store, on_change=lambda tenant: ruler.sync(1, tenant)), ruler)


def _client(service, auth_enabled=True, handles=None, api_enabled=True):
    rulers = RulerClient(handles or Handle(service))
    app = app_with(Services(rulers=rulers), auth_enabled=auth_enabled, ruler_api_enabled=api_enabled)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svc")


def run(coro):
    return asyncio.run(coro)


H = {"X-Scope-OrgID": "t1"}
YAML = {"Content-Type": "application/yaml"}


def test_rules_api_round_trip(service):
    async def scenario():
        async with _client(service) as c:
            r = await c.post("/loki/api/v1/rules/ns-one", content=ALERT_BODY, headers={**H, **YAML})
            assert r.status_code == 202 and r.json()["status"] == "success"
            r = await c.post("/svc/api/v1/rules/ns-two", content=RECORD_BODY, headers={**H, **YAML})
            assert r.status_code == 202
            r = await c.get("/svc/api/v1/rules", headers=H)
            assert r.status_code == 200 and r.headers["content-type"].startswith("application/yaml")
            assert list(yaml.safe_load(r.text)) == ["ns-one", "ns-two"]
            r = await c.get("/api/prom/rules/ns-one", headers=H)
            assert list(yaml.safe_load(r.text)) == ["ns-one"]
            r = await c.get("/svc/api/v1/rules/ns-two/nginx-recording", headers=H)
            assert yaml.safe_load(r.text)["name"] == "nginx-recording"
            assert (await c.delete("/svc/api/v1/rules/ns-two/nginx-recording", headers=H)).status_code == 202
            assert (await c.get("/svc/api/v1/rules/ns-two/nginx-recording", headers=H)).status_code == 404
            assert (await c.delete("/svc/api/v1/rules/ns-one", headers=H)).status_code == 202
            r = await c.get("/svc/api/v1/rules", headers=H)
            assert r.status_code == 404 and "no rule groups found" in r.text

    run(scenario())


def test_errors_and_tenants(service):
    async def scenario():
        async with _client(service) as c:
            r = await c.post("/svc/api/v1/rules/ns", content="name: [x\n", headers={**H, **YAML})
            assert r.status_code == 400 and "unable to decoded rule group" in r.text
            r = await c.post("/svc/api/v1/rules/ns", content=ALERT_BODY.replace("> 1", "> > 1"), headers=H)
            assert r.status_code == 400 and "could not parse expression" in r.text
            assert (await c.get("/svc/api/v1/rules")).status_code == 401  # no tenant header
            assert (await c.delete("/svc/api/v1/rules/none", headers=H)).status_code == 404
            assert (await c.delete("/svc/api/v1/rules/none/g", headers=H)).status_code == 202  # idempotent
            assert (await c.get("/svc/api/v1/rules/a/b/c", headers=H)).status_code == 404
            await c.post("/svc/api/v1/rules/ns", content=ALERT_BODY, headers={"X-Scope-OrgID": "other"})
            assert (await c.get("/svc/api/v1/rules", headers=H)).status_code == 404

    run(scenario())


def test_namespace_with_encoded_slash_and_unicode(service):
    async def scenario():
        async with _client(service) as c:
            assert (
                await c.post("/svc/api/v1/rules/team%2Fa%20b%C3%BC", content=ALERT_BODY, headers=H)
            ).status_code == 202
            r = await c.get("/svc/api/v1/rules", headers=H)
            assert list(yaml.safe_load(r.text)) == ["team/a bü"]
            r = await c.get("/svc/api/v1/rules/team%2Fa%20b%C3%BC/api-errors", headers=H)
            assert r.status_code == 200

    run(scenario())


def test_single_tenant_mode_uses_fake(service):
    async def scenario():
        async with _client(service, auth_enabled=False) as c:
            assert (await c.post("/svc/api/v1/rules/ns", content=ALERT_BODY)).status_code == 202
        assert service.api.store.list_groups("fake")

    run(scenario())


def test_compat_routes(service):
    async def scenario():
        async with _client(service) as c:
            await c.post("/svc/api/v1/rules/alerts", content=ALERT_BODY.replace("for: 2m", "for: 0s"), headers=H)
            await c.post("/svc/api/v1/rules/records", content=RECORD_BODY, headers=H)
            group = service.ruler.groups("t1")[0]
            service.ruler.tick(group.next_eval_ns + NS)
            r = await c.get("/compat/api/v1/rules", headers=H)
            body = r.json()
            assert r.status_code == 200 and body["status"] == "success"
            assert {g["file"] for g in body["data"]["groups"]} == {"alerts", "records"}
            r = await c.get("/prometheus/api/v1/rules", params=[("type", "alert")], headers=H)
            assert [g["file"] for g in r.json()["data"]["groups"]] == ["alerts"]
            r = await c.get("/compat/api/v1/rules", params=[("file", "records"), ("file", "x")], headers=H)
            assert [g["file"] for g in r.json()["data"]["groups"]] == ["records"]
            r = await c.get("/compat/api/v1/rules", params=[("type", "bogus")], headers=H)
            assert r.status_code == 400 and r.json()["errorType"] == "bad_data"
            r = await c.get("/compat/api/v1/alerts", headers=H)
            [alert] = r.json()["data"]["alerts"]
            assert alert["state"] == "firing" and alert["labels"]["alertname"] == "HighApiErrorRate"
            r = await c.get("/compat/api/v1/alerts", headers={"X-Scope-OrgID": "nobody"})
            assert r.json() == {"status": "success", "data": {"alerts": []}}

    run(scenario())


def test_compat_merges_several_rulers(service, rule_store):
    other = RulerService(RulesAPI(rule_store), Ruler(rule_store, NoQueries(), RulerSettings()))

    async def scenario():
        async with _client(service, handles=[Handle(service), Handle(other)]) as c:
            await c.post("/svc/api/v1/rules/ns", content=ALERT_BODY, headers=H)
            r = await c.get("/compat/api/v1/rules", headers=H)
            assert len(r.json()["data"]["groups"]) == 1  # only the first ruler loaded it so far

    run(scenario())


def test_compat_merges_the_rulers_a_ruler_names(rule_store):
    """One ruler is the entry; its `rulers()` names all of them, each answering for its own groups."""
    from svclog.ring.ring import Ring

    ring = Ring()
    for member in ("r0", "r1"):
        ring.register(member, member, node=member, num_tokens=64)
    services: dict[str, RulerService] = {}
    for member in ("r0", "r1"):
        ruler = Ruler(rule_store, NoQueries(), RulerSettings(instance_id=member), ring=lambda: ring)
        api = RulesAPI(rule_store, on_change=lambda tenant: [s.ruler.sync(1, tenant) for s in services.values()])
        services[member] = RulerService(api, ruler, peers=lambda: [Handle(s) for s in services.values()])

    async def scenario():
        app = app_with(Services(rulers=RulerClient(Handle(services["r0"]))), auth_enabled=True, ruler_api_enabled=True)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svc") as c:
            for i in range(12):
                body = ALERT_BODY.replace("api-errors", f"g{i}")
                assert (await c.post("/svc/api/v1/rules/ns", content=body, headers=H)).status_code == 202
            per_ruler = [len(s.ruler.groups("t1")) for s in services.values()]
            assert sum(per_ruler) == 12 and all(per_ruler)  # shared, each group loaded once
            r = await c.get("/compat/api/v1/rules", headers=H)
            assert sorted(g["name"] for g in r.json()["data"]["groups"]) == sorted(f"g{i}" for i in range(12))
            r = await c.get("/compat/api/v1/alerts", headers=H)
            assert r.status_code == 200 and r.json()["data"] == {"alerts": []}

    run(scenario())


def test_disabled_api_answers_404_everywhere(service):
    paths = [
        "/svc/api/v1/rules",
        "/svc/api/v1/rules/ns",
        "/svc/api/v1/rules/ns/g",
        "/api/prom/rules",
        "/loki/api/v1/rules/ns",
        "/prometheus/api/v1/rules",
        "/prometheus/api/v1/alerts",
        "/compat/api/v1/rules",
        "/compat/api/v1/alerts",
        "/api/prom/api/v1/alerts",
    ]

    async def scenario():
        async with _client(service, api_enabled=False) as c:
            for path in paths:
                for headers in (H, {}):
                    r = await c.get(path, headers=headers)
                    assert r.status_code == 404 and "404 page not found" in r.text, (path, r.text)
            r = await c.post("/svc/api/v1/rules/ns", content=ALERT_BODY, headers={**H, **YAML})
            assert r.status_code == 404
            assert (await c.delete("/svc/api/v1/rules/ns", headers=H)).status_code == 404
        assert service.api.store.list_groups("t1") == {}

    run(scenario())


def test_api_follows_the_gateway_config():
    from svclog.config import load_config
    from svclog.serve.app import GatewaySettings

    assert not GatewaySettings.from_config(load_config(None, [])).ruler_api_enabled  # off by default
    assert GatewaySettings.from_config(load_config(None, ["-ruler.enable-api=true"])).ruler_api_enabled


# ---------------------------------------------------------------- recorded conformance cases


def _shape_ok(value, shape) -> bool:
    types = {"$number": (int, float), "$string": str, "$list": list, "$object": dict, "$bool": bool}
    if isinstance(shape, dict):
        return isinstance(value, dict) and all(k in value and _shape_ok(value[k], v) for k, v in shape.items())
    if shape == "$any":
        return True
    if isinstance(shape, str) and shape in types:
        return isinstance(value, types[shape])
    return value == shape


async def _replay(client, case):
    for step in case.get("steps", [case]):
        headers = dict(step.get("headers", {}))
        if "content_type" in step:
            headers["Content-Type"] = step["content_type"]
        r = await client.request(
            step["method"], step["path"], params=step.get("params") or None, content=step.get("body"), headers=headers
        )
        expect = step["expect"]
        statuses = expect["status"] if isinstance(expect["status"], list) else [expect["status"]]
        assert r.status_code in statuses, (step["path"], r.status_code, r.text)
        if expect.get("nonempty"):
            assert r.content
        for text in expect.get("contains", []):
            assert text in r.text
        for text in expect.get("not_contains", []):
            assert text not in r.text
        if "shape" in expect:
            assert _shape_ok(r.json(), expect["shape"])


@pytest.mark.skipif(not CASES.is_dir(), reason="shared conformance cases not present")
@pytest.mark.parametrize("path", sorted(CASES.glob("*.json")) if CASES.is_dir() else [], ids=lambda p: p.stem)
def test_conformance_rules_cases(service, path):
    case = json.loads(path.read_text())

    async def scenario():
        async with _client(service) as c:
            await _replay(c, case)

    run(scenario())
