"""Pushes taken past the framework's routing (svclog/serve/push_lane.py) answer exactly as the
framework's route does: same status, body and content type for good and bad pushes, on every push
path; other methods and paths still go through the framework."""

from __future__ import annotations

import asyncio
import gzip
import json
import time

import httpx
import pytest

from svclog.serve.app import LOKI_PUSH_PATHS, Services
from svclog.serve.push_lane import PushLane
from tests.fuzz.harness import app_with
from tests.serve.test_push_partial import InProcessBackend

NOW = time.time_ns()


def _body(labels: dict[str, str], line: str = "a line") -> bytes:
    return json.dumps({"streams": [{"stream": labels, "values": [[str(NOW), line]]}]}).encode()


def _app(with_lane: bool, backend: InProcessBackend, **settings):
    app = app_with(Services(backend=backend), **settings)
    if not with_lane:  # the same app, the push route served by the framework
        app.user_middleware = [m for m in app.user_middleware if m.cls is not PushLane]
    return app


def _send(app, method: str, path: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
    async def send():
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://svclog") as client:
            return await client.request(method, path, content=body, headers=headers)

    return asyncio.run(send())


CASES = [
    ("good json", _body({"app": "a"}), {"Content-Type": "application/json"}),
    ("gzip json", gzip.compress(_body({"app": "z"})), {"Content-Type": "application/json", "Content-Encoding": "gzip"}),
    ("bad json", b'{"streams": [', {"Content-Type": "application/json"}),
    ("bad labels", _body({"1a": "x"}), {"Content-Type": "application/json"}),
    ("no streams", b"{}", {"Content-Type": "application/json"}),
    ("odd media type", b"x", {"Content-Type": "text/plain"}),
    ("bad encoding", b"not gzip", {"Content-Type": "application/json", "Content-Encoding": "gzip"}),
    ("two tenants", _body({"app": "t"}), {"Content-Type": "application/json", "X-Scope-OrgID": "a|b"}),
    ("no tenant", _body({"app": "n"}), {"Content-Type": "application/json", "X-Scope-OrgID": ""}),
]


@pytest.mark.parametrize("path", sorted(LOKI_PUSH_PATHS))
@pytest.mark.parametrize(("case", "body", "headers"), CASES, ids=[c[0] for c in CASES])
def test_a_push_answers_as_the_framework_route(path, case, body, headers):
    answers, stored = [], []
    for with_lane in (True, False):
        backend = InProcessBackend()
        headers = {"X-Scope-OrgID": "tenant-a", **headers}
        resp = _send(_app(with_lane, backend, auth_enabled=True), "POST", path, body, headers)
        answers.append((resp.status_code, resp.text, resp.headers.get("content-type")))
        stored.append(backend.pusher.stored)
    assert answers[0] == answers[1]
    assert stored[0] == stored[1]
    if case in ("good json", "gzip json"):
        assert answers[0][0] == 204 and stored[0]
    elif case == "no streams":  # nothing to store, as the reference answers
        assert answers[0][0] == 204 and not stored[0]
    else:
        assert answers[0][0] // 100 == 4, answers[0]


def test_an_oversized_push_is_refused_by_its_own_cap():
    big = _body({"app": "big"}, "x" * 5000)
    for with_lane in (True, False):
        resp = _send(
            _app(with_lane, InProcessBackend(), auth_enabled=False, max_body_bytes=1000),
            "POST",
            "/loki/api/v1/push",
            big,
            {"Content-Type": "application/json"},
        )
        assert resp.status_code == 413, resp.text


@pytest.mark.parametrize(
    ("method", "path"), [("GET", "/loki/api/v1/push"), ("PUT", "/svc/api/v1/push"), ("POST", "/loki/api/v1/push/")]
)
def test_other_methods_and_paths_answer_as_before(method, path):
    body, headers = _body({"app": "a"}), {"Content-Type": "application/json"}
    answers = []
    for with_lane in (True, False):
        resp = _send(_app(with_lane, InProcessBackend(), auth_enabled=False), method, path, body, headers)
        answers.append((resp.status_code, resp.text))
    assert answers[0] == answers[1]
    assert answers[0][0] in (404, 405)


def test_the_lane_calls_the_handler_without_the_router():
    calls = []

    async def handler(request):
        calls.append(await request.body())
        from starlette.responses import Response

        return Response(status_code=204)

    async def framework(scope, receive, send):
        raise AssertionError("the framework was asked")

    lane = PushLane(framework, handler, ["/loki/api/v1/push"])
    resp = _send(lane, "POST", "/loki/api/v1/push", b"body", {})
    assert resp.status_code == 204 and calls == [b"body"]
