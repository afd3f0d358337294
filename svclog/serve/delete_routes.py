"""Log deletion routes: create (POST/PUT), list (GET) and cancel (DELETE) delete requests.

Served under `/svc/api/v1/delete` and `/loki/api/v1/delete` (rows of svclog/serve/routes.py);
every call goes to the compactor (through svclog/actors/service_clients.CompactorClient), whose
typed errors come back as the usual plain-text error responses.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import Response

from svclog.serve.errors import error_response
from svclog.serve.request_params import read_params
from svclog.serve.tenants import Tenants


class DeleteRequests(Protocol):
    """What the routes need of the compactor; its errors are the compactor's own (SvcError -> 4xx)."""

    async def create_delete_request(
        self, tenant: str, query: str | None, start: str | None, end: str | None, max_interval: str | None
    ) -> None: ...

    async def list_delete_requests(self, tenant: str) -> list[dict]: ...

    async def cancel_delete_request(self, tenant: str, request_id: str | None, force: bool) -> None: ...


class DeleteHandlers:
    """Create (POST/PUT), list (GET) and cancel (DELETE) delete requests of the caller's tenant."""

    def __init__(self, compactor: DeleteRequests, tenants: Tenants):
        self.compactor = compactor
        self.tenants = tenants

    async def _guarded(self, request: Request, work: Callable[[str, Any], Awaitable[Response]]) -> Response:
        try:
            tenant = self.tenants.one(request.headers)
            params = await read_params(request)
            return await work(tenant, params)
        except Exception as err:  # noqa: BLE001 - every failure becomes an HTTP answer
            return error_response(err)

    async def create(self, request: Request) -> Response:
        async def work(tenant: str, params: Any) -> Response:
            await self.compactor.create_delete_request(
                tenant, params.get("query"), params.get("start"), params.get("end"), params.get("max_interval")
            )
            return Response(status_code=204)

        return await self._guarded(request, work)

    async def list_requests(self, request: Request) -> Response:
        async def work(tenant: str, params: Any) -> Response:
            found = await self.compactor.list_delete_requests(tenant)
            body = json.dumps(found, separators=(",", ":")).encode()
            return Response(body, status_code=200, media_type="application/json")

        return await self._guarded(request, work)

    async def cancel(self, request: Request) -> Response:
        async def work(tenant: str, params: Any) -> Response:
            force = (params.get("force") or "").lower() == "true"
            await self.compactor.cancel_delete_request(tenant, params.get("request_id"), force)
            return Response(status_code=204)

        return await self._guarded(request, work)
