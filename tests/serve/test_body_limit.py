"""BodyLimit: a declared or streamed body over the cap is answered 413; exempt routes pass untouched."""

from __future__ import annotations

import asyncio

import httpx
from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import PlainTextResponse

from svclog.serve.body_limit import BodyLimit
from svclog.serve.request_params import read_params

CAP = 100


def make_app() -> tuple[FastAPI, list[str]]:
    app = FastAPI()
    calls: list[str] = []

    @app.post("/form")
    async def form(request: Request):
        calls.append("form")
        params = await read_params(request)
        return PlainTextResponse(f"query={params.get('query')}")

    @app.post("/swallows")
    async def swallows(request: Request):  # a handler that turns every error into a 500 of its own
        try:
            await request.body()
        except Exception as err:  # noqa: BLE001
            return PlainTextResponse(f"internal error: {err}", status_code=500)
        return PlainTextResponse("read")

    @app.post("/push")
    async def push(request: Request):
        return PlainTextResponse(str(len(await request.body())))

    app.add_middleware(BodyLimit, limit_for=lambda path: None if path == "/push" else CAP)
    return app, calls


def call(app, method, path, **kw) -> httpx.Response:
    async def send():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svclog") as client:
            return await client.request(method, path, **kw)

    return asyncio.run(send())


def chunks(total: int, size: int = 30):
    async def gen():
        sent = 0
        while sent < total:
            piece = min(size, total - sent)
            yield b"q" * piece
            sent += piece

    return gen()


FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def test_small_form_passes():
    app, calls = make_app()
    resp = call(app, "POST", "/form", content=b"query=up", headers=FORM)
    assert resp.status_code == 200 and resp.text == "query=up" and calls == ["form"]


def test_declared_length_over_the_cap_is_refused_before_the_route_runs():
    app, calls = make_app()
    resp = call(app, "POST", "/form", content=b"query=" + b"x" * 200, headers=FORM)
    assert resp.status_code == 413
    assert resp.text == f"request body too large: 206 bytes > limit {CAP} for /form\n"
    assert resp.headers["connection"] == "close" and calls == []


def test_streamed_body_is_cut_off_past_the_cap():
    app, calls = make_app()
    resp = call(app, "POST", "/form", content=chunks(1000), headers=FORM)
    assert "content-length" not in resp.request.headers  # really chunked
    assert resp.status_code == 413 and resp.text == f"request body too large: more than {CAP} bytes for /form\n"


def test_streamed_body_within_the_cap_passes():
    app, _ = make_app()
    resp = call(app, "POST", "/swallows", content=chunks(CAP))
    assert resp.status_code == 200 and resp.text == "read"


def test_a_route_that_swallows_errors_still_answers_413():
    app, _ = make_app()
    resp = call(app, "POST", "/swallows", content=chunks(500))
    assert resp.status_code == 413 and "more than 100 bytes" in resp.text


def test_exempt_route_keeps_its_own_behaviour():
    app, _ = make_app()
    resp = call(app, "POST", "/push", content=b"p" * 5000)
    assert resp.status_code == 200 and resp.text == "5000"
    resp = call(app, "POST", "/push", content=chunks(5000))
    assert resp.status_code == 200 and resp.text == "5000"


def test_route_prefix_is_stripped_before_the_cap_lookup():
    seen: list[str] = []

    async def inner(scope, receive, send):
        await PlainTextResponse("ok")(scope, receive, send)

    def limit_for(path):
        seen.append(path)
        return CAP

    app = BodyLimit(inner, limit_for)
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/read/svc/api/v1/query",
        "root_path": "/read",
        "headers": [(b"content-length", b"5")],
    }
    messages = []

    async def receive():
        return {"type": "http.request", "body": b"hello", "more_body": False}

    async def send(message):
        messages.append(message)

    asyncio.run(app(scope, receive, send))
    assert seen == ["/svc/api/v1/query"] and messages[0]["status"] == 200
