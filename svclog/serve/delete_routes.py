"""Log deletion routes: create (POST/PUT), list (GET) and cancel (DELETE) delete requests.

Served under `/svc/api/v1/delete` and `/loki/api/v1/delete`; every call goes to the
compactor (through svclog/actors/service_clients.CompactorClient), whose typed errors come
back as the usual plain-text error responses. Serve pickles the app to its replicas, so pass
module-level functions: `get_compactor` (and `auth_enabled` may be one too, read per request,
when it is known only at start-up).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response

from svclog.model import single_tenant
from svclog.serve.errors import error_response
from svclog.serve.request_params import read_params

DELETE_PATHS = ("/svc/api/v1/delete", "/loki/api/v1/delete")


class DeleteRequests(Protocol):
    """What the routes need of the compactor; its errors are the compactor's own (SvcError -> 4xx)."""

    async def create_delete_request(
        self, tenant: str, query: str | None, start: str | None, end: str | None, max_interval: str | None
    ) -> None: ...

    async def list_delete_requests(self, tenant: str) -> list[dict]: ...

    async def cancel_delete_request(self, tenant: str, request_id: str | None, force: bool) -> None: ...


def add_delete_routes(
    app: FastAPI, get_compactor: Callable[[], DeleteRequests], auth_enabled: bool | Callable[[], bool]
) -> FastAPI:
    def tenant_of(request: Request) -> str:
        enabled = auth_enabled() if callable(auth_enabled) else auth_enabled
        return single_tenant(request.headers.get("x-scope-orgid"), auth_enabled=enabled)

    async def guarded(request: Request, work: Callable[[str, Any], Any]) -> Response:
        try:
            tenant = tenant_of(request)
            params = await read_params(request)
            return await work(tenant, params)
        except Exception as err:  # noqa: BLE001 - every failure becomes an HTTP answer
            return error_response(err)

    async def create(request: Request) -> Response:
        async def work(tenant: str, params: Any) -> Response:
            await get_compactor().create_delete_request(
                tenant, params.get("query"), params.get("start"), params.get("end"), params.get("max_interval")
            )
            return Response(status_code=204)

        return await guarded(request, work)

    async def list_requests(request: Request) -> Response:
        async def work(tenant: str, params: Any) -> Response:
            found = await get_compactor().list_delete_requests(tenant)
            body = json.dumps(found, separators=(",", ":")).encode()
            return Response(body, status_code=200, media_type="application/json")

        return await guarded(request, work)

    async def cancel(request: Request) -> Response:
        async def work(tenant: str, params: Any) -> Response:
            force = (params.get("force") or "").lower() == "true"
            await get_compactor().cancel_delete_request(tenant, params.get("request_id"), force)
            return Response(status_code=204)

        return await guarded(request, work)

    for path in DELETE_PATHS:
        app.add_api_route(path, create, methods=["POST", "PUT"], include_in_schema=False)
        app.add_api_route(path, list_requests, methods=["GET"], include_in_schema=False)
        app.add_api_route(path, cancel, methods=["DELETE"], include_in_schema=False)
    return app
