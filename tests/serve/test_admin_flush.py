"""/flush is an admin route: 204 when every ingester flushed, 503 naming an ingester that is down."""

from __future__ import annotations

import asyncio

import httpx

from svclog.serve.admin_backend import IngesterUnavailable
from svclog.serve.app import Services
from tests.fuzz.harness import app_with


class FlushOnly:
    def __init__(self, down: str | None = None):
        self.down = down
        self.flushes = 0

    async def flush(self):
        self.flushes += 1
        if self.down:
            raise IngesterUnavailable(f"flush: ingester {self.down} is unavailable: actor died")
        return {"ingester-0": 1}

    async def prepare_shutdown(self, action, ingester):
        raise IngesterUnavailable(f"prepare_shutdown: ingester {self.down} is unavailable: actor died")


def call(app, method, path) -> httpx.Response:
    async def send():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svclog") as client:
            return await client.request(method, path)

    return asyncio.run(send())


def test_flush_answers_204_once_every_ingester_flushed():
    backend = FlushOnly()
    app = app_with(Services(admin=backend))
    assert call(app, "POST", "/flush").status_code == 204
    assert call(app, "GET", "/flush").status_code == 204 and backend.flushes == 2


def test_a_down_ingester_is_a_503_that_names_it():
    backend = FlushOnly(down="ingester-1")
    app = app_with(Services(admin=backend))
    for method, path in (("POST", "/flush"), ("GET", "/ingester/prepare_shutdown")):
        resp = call(app, method, path)
        assert resp.status_code == 503 and "ingester ingester-1 is unavailable" in resp.text, (path, resp.text)


def test_flush_is_one_route_of_the_table():
    backend = FlushOnly(down="ingester-1")
    app = app_with(Services(admin=backend))
    assert [r.path for r in app.router.routes].count("/flush") == 1
    assert call(app, "POST", "/flush").status_code == 503 and backend.flushes == 1
