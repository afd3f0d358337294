"""The delete routes over ASGI, against a real Compactor behind a `.remote()` shim (no Ray)."""

import asyncio
import json
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from svclog.actors.service_clients import CompactorClient
from svclog.serve.app import Services
from svclog.storage.objstore import ObjectStore
from tests.compactor.helpers import Clock, make_compactor
from tests.fuzz.harness import app_with

CASES = Path("/work/shared/conformance/cases/deletes")


class RemoteTaskError(Exception):
    """Shaped like ray.exceptions.RayTaskError: the actor's exception is in `.cause`."""

    def __init__(self, cause: Exception):
        super().__init__(f"task failed: {cause!r}")
        self.cause = cause


class _Method:
    def __init__(self, fn):
        self.fn = fn

    def remote(self, *args):
        async def run():
            try:
                return self.fn(*args)
            except Exception as err:
                raise RemoteTaskError(err) from err

        return run()


class FakeActor:
    def __init__(self, compactor):
        for name in ("create_delete_request", "list_delete_requests", "cancel_delete_request", "run_once"):
            setattr(self, name, _Method(getattr(compactor, name)))


class Client:
    """A synchronous face on httpx's ASGI transport (no server, no Ray)."""

    def __init__(self, app: FastAPI):
        self.app = app

    def request(self, method: str, path: str, **kwargs) -> httpx.Response:
        async def send() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://svc") as client:
                return await client.request(method, path, **kwargs)

        return asyncio.run(send())

    def get(self, path: str, **kwargs) -> httpx.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs) -> httpx.Response:
        return self.request("POST", path, **kwargs)

    def delete(self, path: str, **kwargs) -> httpx.Response:
        return self.request("DELETE", path, **kwargs)


@pytest.fixture
def client(tmp_path):
    compactor = make_compactor(ObjectStore(str(tmp_path)), Clock())
    actor = FakeActor(compactor)
    app = app_with(Services(compactor=CompactorClient(actor)), auth_enabled=True)
    return Client(app)


def _run_steps(client, steps):
    captured = {}
    for step in steps:
        params = [(k, v.replace("{{rid}}", captured.get("rid", ""))) for k, v in step.get("params", [])]
        resp = client.request(step["method"], step["path"], params=params, headers=step.get("headers", {}))
        expect = step["expect"]
        assert resp.status_code == expect["status"], (step, resp.text)
        if expect.get("nonempty"):
            assert resp.content
        if "body" in expect:
            body = resp.json()
            ignored = set(expect.get("ignore_fields", []))
            strip = [{k: v for k, v in item.items() if k not in ignored} for item in body]
            assert strip == expect["body"]
        for name, path in step.get("capture", {}).items():
            index, field = path.split(".")
            captured[name] = resp.json()[int(index)][field]


@pytest.mark.parametrize("case", sorted(CASES.glob("*.json")) if CASES.exists() else [], ids=lambda p: p.stem)
def test_recorded_conformance_cases(client, case):
    steps = json.loads(case.read_text())["steps"]
    _run_steps(client, [dict(s, path=s["path"]) for s in steps])
    _run_steps(client, [dict(s, path=s["path"].replace("/svc/", "/loki/")) for s in steps])


def test_status_codes_and_errors(client):
    headers = {"X-Scope-OrgID": "t"}
    assert client.get("/svc/api/v1/delete").status_code == 401  # no tenant
    resp = client.post(
        "/svc/api/v1/delete", params={"query": '{app="a"} | json', "start": "1793491200"}, headers=headers
    )
    assert resp.status_code == 400 and "line filters" in resp.text and "Traceback" not in resp.text
    form = client.post("/svc/api/v1/delete", data={"query": '{app="a"}', "start": "1793491200"}, headers=headers)
    assert form.status_code == 204
    rid = client.get("/svc/api/v1/delete", headers=headers).json()[0]["request_id"]
    assert client.delete("/svc/api/v1/delete", params={"request_id": "nope"}, headers=headers).status_code == 404
    assert (
        client.delete("/loki/api/v1/delete", params={"request_id": rid, "force": "true"}, headers=headers).status_code
        == 204
    )
    assert client.get("/loki/api/v1/delete", headers=headers).json() == []


def test_auth_disabled_uses_the_fake_tenant(tmp_path):
    compactor = make_compactor(ObjectStore(str(tmp_path)), Clock())
    actor = FakeActor(compactor)
    client = Client(app_with(Services(compactor=CompactorClient(actor)), auth_enabled=False))
    assert client.post("/svc/api/v1/delete", params={"query": '{app="a"}', "start": "1793491200"}).status_code == 204
    assert [r["query"] for r in compactor.list_delete_requests("fake")] == ['{app="a"}']
