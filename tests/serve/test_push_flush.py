"""POST /flush through the handlers: 204 when every ingester flushed, 503 naming the store error otherwise."""
from __future__ import annotations

import asyncio

import httpx
from fastapi import FastAPI

from svclog.ingester.ingester import FlushError
from svclog.serve.handlers import Handlers
from svclog.serve.routes import add_routes, set_handlers


class FlushBackend:
    def __init__(self, error=None):
        self.error = error

    async def flush(self):
        if self.error is not None:
            raise self.error


def _flush(backend) -> httpx.Response:
    set_handlers(Handlers(backend, auth_enabled=False, multi_tenant_queries=False, max_body_bytes=1 << 20))
    app = add_routes(FastAPI())

    async def send():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svclog") as client:
            return await client.post("/flush")

    return asyncio.run(send())


def test_flush_ok_is_204():
    assert _flush(FlushBackend()).status_code == 204


def test_failed_upload_is_503_naming_the_store_error():
    resp = _flush(FlushBackend(FlushError("flush failed: ... OSError: bucket unreachable")))
    assert resp.status_code == 503 and "OSError: bucket unreachable" in resp.text


def test_unreachable_ingesters_are_503():
    resp = _flush(FlushBackend(RuntimeError("1 ingesters failed to answer; data may be incomplete")))
    assert resp.status_code == 503 and "flush failed: 1 ingesters failed to answer" in resp.text
