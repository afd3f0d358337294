"""POST /flush: 204 when every ingester flushed, 503 naming the object store error otherwise."""

from __future__ import annotations

import asyncio

import httpx

from svclog.ingester.ingester import FlushError
from svclog.serve.app import Services
from tests.fuzz.harness import app_with


class FlushBackend:
    def __init__(self, error=None):
        self.error = error

    async def flush(self):
        if self.error is not None:
            raise self.error
        return {"ingester-0": 1}


def _flush(backend) -> httpx.Response:
    app = app_with(Services(admin=backend))

    async def send():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svclog") as client:
            return await client.post("/flush")

    return asyncio.run(send())


def test_flush_ok_is_204():
    assert _flush(FlushBackend()).status_code == 204


def test_failed_upload_is_503_naming_the_store_error():
    resp = _flush(FlushBackend(FlushError("flush failed: ... OSError: bucket unreachable")))
    assert resp.status_code == 503 and "OSError: bucket unreachable" in resp.text
