"""The route table: every endpoint under /svc and its aliases (/loki, deprecated paths)."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request

from svclog.serve.errors import unknown_route_response
from svclog.serve.tenant_header import SingleOrgIdHeader

API_PREFIXES = ("/svc", "/loki")
GET, POST, GET_POST = ["GET"], ["POST"], ["GET", "POST"]

# (handler name, methods, paths relative to each API prefix)
API_ROUTES = [
    ("push", POST, ["/api/v1/push"]),
    ("query_range", GET_POST, ["/api/v1/query_range"]),
    ("query", GET_POST, ["/api/v1/query"]),
    ("labels", GET_POST, ["/api/v1/labels", "/api/v1/label"]),
    ("label_values", GET_POST, ["/api/v1/label/{name}/values"]),
    ("series", GET_POST, ["/api/v1/series"]),
    ("format_query", GET_POST, ["/api/v1/format_query"]),
    ("index_stats", GET_POST, ["/api/v1/index/stats"]),
    ("volume", GET_POST, ["/api/v1/index/volume"]),
    ("volume_range", GET_POST, ["/api/v1/index/volume_range"]),
    ("buildinfo", GET, ["/api/v1/status/buildinfo"]),
    ("detected_labels", GET_POST, ["/api/v1/detected_labels"]),
    ("detected_fields", GET_POST, ["/api/v1/detected_fields"]),
    ("detected_field_values", GET_POST, ["/api/v1/detected_field/{name}/values"]),
    ("drilldown_limits", GET, ["/api/v1/drilldown-limits"]),
]
# Deprecated routes (still served) and other absolute paths.
OTHER_ROUTES = [
    ("push", POST, ["/api/legacy/push", "/api/prom/push"]),
    ("legacy_query", GET_POST, ["/api/legacy/query", "/api/prom/query"]),
    ("legacy_labels", GET_POST, ["/api/legacy/label", "/api/prom/label"]),
    ("legacy_label_values", GET_POST, ["/api/legacy/label/{name}/values", "/api/prom/label/{name}/values"]),
    ("series", GET_POST, ["/api/legacy/series", "/api/prom/series"]),
    ("metrics", GET, ["/metrics"]),
    ("config", GET, ["/config"]),
]


# The handlers of this process. Serve ships the app to replicas by pickling it, so the
# app object a replica runs is not the one its constructor sees: a module global is.
_handlers: list = []


def set_handlers(handlers) -> None:
    _handlers[:] = [handlers]


def current_handlers():
    # A module-level function is pickled by reference, so this reads the live global
    # (a closure's captured globals would be pickled by value).
    return _handlers[0]


def _endpoint(name: str):
    async def endpoint(request: Request):
        return await getattr(current_handlers(), name)(request)

    endpoint.__name__ = name
    return endpoint


def add_routes(app: FastAPI) -> FastAPI:
    for name, methods, paths in API_ROUTES:
        for prefix in API_PREFIXES:
            for path in paths:
                app.add_api_route(prefix + path, _endpoint(name), methods=methods, include_in_schema=False)
    for name, methods, paths in OTHER_ROUTES:
        for path in paths:
            app.add_api_route(path, _endpoint(name), methods=methods, include_in_schema=False)
    app.add_middleware(SingleOrgIdHeader)  # wraps every route of the app, those added later too
    app.add_exception_handler(StarletteHTTPException, unknown_route_response)  # plain 404, not JSON
    return app
