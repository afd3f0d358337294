"""The composition root: the gateway's HTTP application, built from its settings and the services
it calls.

The Serve deployment (svclog/serve/deployments.py) passes the Ray-backed services and keeps the
app it built; tests/fuzz/harness.py passes in-process ones. Every route is a row of the one
table (svclog/serve/routes.py), served by handler objects made here with their services.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from svclog import targets
from svclog.config import Config, config_to_yaml, limits_for
from svclog.config.limits import LimitsConfig
from svclog.serve.admin_routes import AdminBackend, AdminHandlers
from svclog.serve.backend import Backend
from svclog.serve.body_limit import ASGIApp, BodyLimit, Receive, Scope, Send
from svclog.serve.delete_routes import DeleteHandlers, DeleteRequests
from svclog.serve.drilldown import otlp_index_labels
from svclog.serve.errors import Unavailable, unknown_route_response
from svclog.serve.handlers import QueryHandlers
from svclog.serve.otlp_routes import OtlpHandlers, tenant_otlp_from
from svclog.serve.pattern_routes import PatternHandlers, PatternQueries
from svclog.serve.push_lane import PushLane
from svclog.serve.routes import CLEARED_METHODS, ROUTES, RouteHandlers, add_routes, mismatch_response, row_paths
from svclog.serve.ruler_routes import RulerHandlers, Rulers
from svclog.serve.standby import StandbySwitch
from svclog.serve.tail_routes import TailHandlers
from svclog.serve.tenant_header import SingleOrgIdHeader
from svclog.serve.tenants import Tenants

NS = 1_000_000_000


def _paths_of(handler: str) -> frozenset[str]:
    return frozenset(path for row in ROUTES if row.handler == handler for path in row_paths(row))


# Loki push paths: POSTs go straight to the handler (svclog/serve/push_lane.py)
LOKI_PUSH_PATHS = _paths_of("queries.push")
# Push routes cap their own bodies (server.max_request_body_bytes, their own 413 message).
PUSH_PATHS = LOKI_PUSH_PATHS | _paths_of("otlp.logs")


@dataclass(frozen=True)
class GatewaySettings:
    """What the handlers read of the config, fixed when the app is built."""

    auth_enabled: bool
    multi_tenant_queries: bool
    max_body_bytes: int  # server.max_request_body_bytes: push bodies
    max_decompressed_bytes: int
    request_body_cap: int  # every other route's body (svclog/serve/body_limit.py)
    limits_for: Callable[[str], LimitsConfig]  # per tenant, runtime overrides included
    otlp_index_labels: tuple[str, ...]
    pattern_ingester_enabled: bool
    ruler_api_enabled: bool
    tail_max_duration_s: float
    config_yaml: Callable[[str | None], str] | None = None
    target: str = "all"
    components: frozenset[str] | None = None  # None: every endpoint group is served

    @classmethod
    def from_config(cls, cfg: Config) -> GatewaySettings:
        server = cfg.server
        return cls(
            auth_enabled=cfg.auth_enabled,
            multi_tenant_queries=cfg.querier.multi_tenant_queries_enabled,
            max_body_bytes=server.max_request_body_bytes,
            max_decompressed_bytes=server.max_decompressed_body_bytes,
            # the request message cap (4 MiB by default), never above max_request_body_bytes
            request_body_cap=min(server.grpc_server_max_recv_msg_size, server.max_request_body_bytes),
            limits_for=lambda tenant: limits_for(cfg, tenant),
            otlp_index_labels=otlp_index_labels(cfg),
            pattern_ingester_enabled=cfg.pattern_ingester.enabled,
            ruler_api_enabled=bool(cfg.ruler.enable_api),
            tail_max_duration_s=cfg.querier.tail_max_duration / NS,
            config_yaml=lambda mode: config_to_yaml(cfg, mode),
            target=cfg.target,
            components=targets.components(cfg.targets()),
        )

    def body_limit(self, path: str) -> int | None:
        """The body cap of a route: None for push, which caps itself."""
        return None if path in PUSH_PATHS else self.request_body_cap


class Absent:
    """A service this app was built without (a test's partial app): calling it answers 503."""

    def __init__(self, what: str):
        self.what = what

    def __getattr__(self, name: str) -> Callable[..., Any]:
        def missing(*args: Any, **kwargs: Any) -> Any:
            raise Unavailable(f"{self.what} is not available in this process")

        return missing


def absent(what: str) -> Any:
    return field(default_factory=lambda: Absent(what))


@dataclass(frozen=True)
class Services:
    """The services the handlers call: Ray clients in production, in-process objects in tests."""

    backend: Backend = absent("the write and read path")
    admin: AdminBackend = absent("administration")
    compactor: DeleteRequests = absent("the compactor")
    rulers: Rulers = absent("the ruler")
    patterns: PatternQueries | None = None  # None: the pattern ingester is disabled (404)
    ingesters: Any = absent("the ingester ring")  # the tails' IngesterPool


def handlers_for(settings: GatewaySettings, services: Services) -> RouteHandlers:
    tenants = Tenants(settings.auth_enabled, settings.multi_tenant_queries)
    backend = services.backend
    return RouteHandlers(
        queries=QueryHandlers(
            backend,
            tenants,
            max_body_bytes=settings.max_body_bytes,
            limits_for=settings.limits_for,
            config_yaml=settings.config_yaml,
            pattern_ingester_enabled=settings.pattern_ingester_enabled,
            otlp_index_labels=settings.otlp_index_labels,
        ),
        admin=AdminHandlers(services.admin),
        deletes=DeleteHandlers(services.compactor, tenants),
        patterns=PatternHandlers(
            services.patterns if settings.pattern_ingester_enabled else None, tenants, settings.limits_for
        ),
        rulers=RulerHandlers(services.rulers, tenants, api_enabled=settings.ruler_api_enabled),
        otlp=OtlpHandlers(
            backend,
            tenants,
            max_body_bytes=settings.max_body_bytes,
            max_decompressed_bytes=settings.max_decompressed_bytes,
            tenant_otlp=tenant_otlp_from(settings.limits_for, settings.otlp_index_labels),
        ),
        tails=TailHandlers(
            services.ingesters,
            lambda tenants, request: backend.query(tenants, request),  # the replay
            tenants,
            settings.limits_for,
            max_duration_s=settings.tail_max_duration_s,
        ),
    )


class ServedHere:
    """503 while the replica stands by (starting, stopping); 404 for endpoint groups this process's
    components do not expose (deployment targets).

    A plain ASGI middleware: Starlette's `@app.middleware("http")` form re-streams every
    request body through extra tasks, which measured as a real share of the push path."""

    def __init__(self, app: ASGIApp, settings: GatewaySettings, standby: StandbySwitch | None):
        self.app = app
        self.settings = settings
        self.standby = standby

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        standby = self.standby.app if self.standby is not None and scope["type"] in ("http", "websocket") else None
        if standby is not None:
            await standby(scope, receive, send)  # starting or stopping: 503 + Retry-After, never 404
            return
        components = self.settings.components
        if scope["type"] == "http" and components is not None:
            path, root = scope["path"], scope.get("root_path", "")
            if root and path.startswith(root):
                path = path[len(root) :]
            if not targets.exposes(components, path):
                message = f"404 page not found: {path} is not served by target '{self.settings.target}'\n"
                await PlainTextResponse(message, status_code=404)(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def framework_error(request: Request, exc: Exception) -> Response:
    """The router's own errors as the reference's answers them: a method the matched route does
    not take by the route table's rule, anything else (no route: 404) as plain text."""
    if getattr(exc, "status_code", None) == 405:
        path = request.url.path  # a table path itself, or the matched row's path template
        if path not in CLEARED_METHODS:
            path = getattr(request.scope.get("route"), "path", path)
        return mismatch_response(path, request.method)
    return await unknown_route_response(request, exc)


def build_app(settings: GatewaySettings, services: Services, standby: StandbySwitch | None = None) -> FastAPI:
    """The gateway's application: every row of the route table over handlers holding `services`."""
    # redirect_slashes off: a path with a trailing slash is another path (404), as in the reference
    app = FastAPI(title="svclog", docs_url=None, redoc_url=None, openapi_url=None, redirect_slashes=False)
    handlers = handlers_for(settings, services)
    add_routes(app, handlers)
    app.add_exception_handler(StarletteHTTPException, framework_error)  # plain 404, not JSON
    # innermost first: pushes past the framework's routing, one X-Scope-OrgID, then what this
    # replica serves, then (outermost) the body cap, which answers 413 before any route reads a body
    app.add_middleware(PushLane, handler=handlers.queries.push, paths=LOKI_PUSH_PATHS)
    app.add_middleware(SingleOrgIdHeader)
    app.add_middleware(ServedHere, settings=settings, standby=standby)
    app.add_middleware(BodyLimit, limit_for=settings.body_limit)
    return app
