"""The route table: every endpoint of the gateway, under /svc and /loki and at its absolute paths.

A row names its handler as "<group>.<method>", a method of one of the handler objects in
`RouteHandlers` (built with their services by the composition root, svclog/serve/app.py).

A method a path does not take answers as the reference's router does (`mismatch_response`):
an empty 405 without `Allow`, or `404 page not found` when a later row of the reference's
registration order, matched methods first, takes that method. The table keeps that order:
component routes, then the ingester's admin routes, then those the server adds last.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from fastapi import FastAPI
from starlette.responses import PlainTextResponse, Response

from svclog.serve.admin_routes import RING_PAGES, AdminHandlers
from svclog.serve.delete_routes import DeleteHandlers
from svclog.serve.handlers import QueryHandlers
from svclog.serve.otlp_routes import OTLP_LOGS_PATH, OtlpHandlers
from svclog.serve.pattern_routes import PatternHandlers
from svclog.serve.ruler_routes import REST, RulerHandlers
from svclog.serve.tail_routes import TailHandlers

API_PREFIXES = ("/svc", "/loki")
GET, POST, GET_POST, DELETE = ("GET",), ("POST",), ("GET", "POST"), ("DELETE",)
ANY_METHOD = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
WEBSOCKET: tuple[str, ...] = ()  # a row without methods is a WebSocket route


class Row(NamedTuple):
    handler: str  # "<group>.<method>" of RouteHandlers
    methods: tuple[str, ...]
    paths: tuple[str, ...]  # relative to each of API_PREFIXES, unless absolute
    absolute: bool = False
    # The reference registers this route methods-first (`Methods(...).Path(...)`): a request whose
    # method it takes clears the method mismatch of every route registered before it (-> 404).
    methods_first: bool = False


def api(handler: str, methods: tuple[str, ...], *paths: str) -> Row:
    return Row(handler, methods, paths)


def at(handler: str, methods: tuple[str, ...], *paths: str, methods_first: bool = False) -> Row:
    return Row(handler, methods, paths, absolute=True, methods_first=methods_first)


ROUTES: tuple[Row, ...] = (
    # push and queries
    api("queries.push", POST, "/api/v1/push"),
    api("queries.query_range", GET_POST, "/api/v1/query_range"),
    api("queries.query", GET_POST, "/api/v1/query"),
    api("queries.labels", GET_POST, "/api/v1/labels", "/api/v1/label"),
    api("queries.label_values", GET_POST, "/api/v1/label/{name}/values"),
    api("queries.series", GET_POST, "/api/v1/series"),
    api("queries.index_stats", GET_POST, "/api/v1/index/stats"),
    api("queries.volume", GET_POST, "/api/v1/index/volume"),
    api("queries.volume_range", GET_POST, "/api/v1/index/volume_range"),
    api("queries.detected_labels", GET_POST, "/api/v1/detected_labels"),
    api("queries.detected_fields", GET_POST, "/api/v1/detected_fields"),
    api("queries.detected_field_values", GET_POST, "/api/v1/detected_field/{name}/values"),
    # deprecated paths, still served
    at("queries.push", POST, "/api/legacy/push", "/api/prom/push"),
    at("queries.legacy_query", GET_POST, "/api/legacy/query", "/api/prom/query"),
    at("queries.legacy_labels", GET_POST, "/api/legacy/label", "/api/prom/label"),
    at("queries.legacy_label_values", GET_POST, "/api/legacy/label/{name}/values", "/api/prom/label/{name}/values"),
    at("queries.series", GET_POST, "/api/legacy/series", "/api/prom/series"),
    at("queries.metrics", ANY_METHOD, "/metrics"),  # the reference's handler takes every method
    at("admin.ring_page", GET_POST, *RING_PAGES),
    # log deletion (the compactor)
    api("deletes.create", ("POST", "PUT"), "/api/v1/delete"),
    api("deletes.list_requests", GET, "/api/v1/delete"),
    api("deletes.cancel", DELETE, "/api/v1/delete"),
    # patterns (the pattern ingester)
    api("patterns.patterns", GET_POST, "/api/v1/patterns"),
    # rules API and the compat views (the rulers)
    api("rulers.rules_get", GET, "/api/v1/rules", "/api/v1/rules" + REST),
    at("rulers.rules_get", GET, "/api/prom/rules", "/api/prom/rules" + REST),
    api("rulers.rules_post", POST, "/api/v1/rules", "/api/v1/rules" + REST),
    at("rulers.rules_post", POST, "/api/prom/rules", "/api/prom/rules" + REST),
    api("rulers.rules_delete", DELETE, "/api/v1/rules", "/api/v1/rules" + REST),
    at("rulers.rules_delete", DELETE, "/api/prom/rules", "/api/prom/rules" + REST),
    at("rulers.compat_rules", GET, "/compat/api/v1/rules", "/prometheus/api/v1/rules", "/api/prom/api/v1/rules"),
    at("rulers.compat_alerts", GET, "/compat/api/v1/alerts", "/prometheus/api/v1/alerts", "/api/prom/api/v1/alerts"),
    # OTLP/HTTP logs, and a helpful answer on every other /otlp path
    at("otlp.logs", POST, OTLP_LOGS_PATH),
    at("otlp.wrong_path", ANY_METHOD, "/otlp", "/otlp/{rest:path}"),
    # live tail: the WebSocket, and a plain GET (or POST) answering why it needs one
    api("tails.websocket", WEBSOCKET, "/api/v1/tail"),
    at("tails.websocket", WEBSOCKET, "/api/legacy/tail", "/api/prom/tail"),
    api("tails.http", GET_POST, "/api/v1/tail"),
    at("tails.http", GET_POST, "/api/legacy/tail", "/api/prom/tail"),
    # the ingester's admin routes, registered methods-first after the components' routes
    at("admin.flush", GET_POST, "/flush", methods_first=True),
    at("admin.prepare_shutdown", ("GET", "POST", "DELETE"), "/ingester/prepare_shutdown", methods_first=True),
    at("admin.shutdown", GET_POST, "/ingester/shutdown", methods_first=True),
    at("admin.flush_shutdown", GET_POST, "/ingester/flush_shutdown"),
    # what the reference's server registers once every component is up
    at("queries.config", GET, "/config"),
    at("admin.services", GET, "/services"),
    at("admin.ready", GET, "/ready"),
    at("admin.log_level", GET_POST, "/log_level"),
    api("queries.buildinfo", GET, "/api/v1/status/buildinfo"),
    api("queries.format_query", GET_POST, "/api/v1/format_query"),
    api("queries.drilldown_limits", GET, "/api/v1/drilldown-limits"),
)


@dataclass(frozen=True)
class RouteHandlers:
    """The handler objects the table's rows name, each holding its injected services."""

    queries: QueryHandlers
    admin: AdminHandlers
    deletes: DeleteHandlers
    patterns: PatternHandlers
    rulers: RulerHandlers
    otlp: OtlpHandlers
    tails: TailHandlers


def row_paths(row: Row) -> Iterator[str]:
    """The absolute paths of a row."""
    if row.absolute:
        yield from row.paths
    else:
        yield from (prefix + path for prefix in API_PREFIXES for path in row.paths)


def http_routes() -> Iterator[tuple[tuple[str, ...], str]]:
    """(methods, absolute path) of every HTTP route, in table order."""
    for row in ROUTES:
        if row.methods:
            for path in row_paths(row):
                yield row.methods, path


def _cleared_methods() -> dict[str, frozenset[str]]:
    """Per path: the methods a later methods-first row takes. In the reference's router such a
    row, tried after the path's own routes failed on their method, matches the method, resets
    the pending 405 and then fails on its path, so the request ends as a 404. (The reference
    orders its components at random per start, which makes this vary there for the component
    routes; the table fixes one of its orders.)"""
    last: dict[str, int] = {}
    for index, row in enumerate(ROUTES):
        if row.methods:
            for path in row_paths(row):
                last[path] = index
    return {
        path: frozenset(m for row in ROUTES[index + 1 :] if row.methods_first for m in row.methods)
        for path, index in last.items()
    }


CLEARED_METHODS = _cleared_methods()
NOT_FOUND = "404 page not found\n"


def mismatch_response(path: str, method: str) -> Response:
    """The answer to `method` on a route `path` (a row's path as registered) that does not take it."""
    if method in CLEARED_METHODS.get(path, ()):
        return PlainTextResponse(NOT_FOUND, status_code=404)
    return Response(status_code=405)  # empty, and without Allow, as the reference's router


def endpoint(handlers: RouteHandlers, name: str) -> Any:
    group, method = name.split(".")
    return getattr(getattr(handlers, group), method)


def add_routes(app: FastAPI, handlers: RouteHandlers) -> FastAPI:
    """Register every row of the table on `app`, served by `handlers`."""
    for row in ROUTES:
        func = endpoint(handlers, row.handler)
        for path in row_paths(row):
            if row.methods:
                app.add_api_route(path, func, methods=list(row.methods), include_in_schema=False)
            else:
                app.add_api_websocket_route(path, func)
    return app
