"""The gateway answers 404 for endpoint groups its deployment target does not expose."""
import asyncio

import httpx
import pytest

from svclog.config import load_config


@pytest.mark.parametrize("target,path,method", [
    ("read", "/svc/api/v1/push", "POST"), ("read", "/otlp/v1/logs", "POST"), ("read", "/flush", "POST"),
    ("write", "/loki/api/v1/query_range", "GET"), ("write", "/svc/api/v1/rules", "GET"),
    ("write", "/svc/api/v1/delete", "GET"), ("backend", "/svc/api/v1/push", "POST"),
    ("querier", "/ingester/shutdown", "POST"),
])
def test_unexposed_groups_are_404(target, path, method):
    from svclog.serve import deployments, runtime

    runtime.configure(load_config(None, [f"-target={target}"]), None)

    async def call():
        transport = httpx.ASGITransport(app=deployments.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://svc") as client:
            return await client.request(method, path, headers={"X-Scope-OrgID": "t"})

    response = asyncio.run(call())
    assert response.status_code == 404
    assert f"target '{target}'" in response.text
