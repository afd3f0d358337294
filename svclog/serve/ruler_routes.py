"""Ruler routes: the rules API (YAML) and the metrics-system-compatible rules/alerts views (JSON).

Rules API under `/svc/api/v1/rules`, `/loki/api/v1/rules` and `/api/prom/rules`;
compat views under `/compat/api/v1/{rules,alerts}`, `/prometheus/api/v1/...` and
`/api/prom/api/v1/...`. Namespace and group names are taken from the raw request path
and percent-decoded one segment at a time, so a namespace holding `%2F` works.
`get_ruler()` returns the rulers' client (svclog/actors/service_clients.RulerClient): any
ruler answers the rules API; when several rulers share the groups the compat views ask each
of them and merge the answers. With `ruler.enable_api` false every route here answers 404,
as the reference registers none of them then.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable
from typing import Any, Protocol

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response

from svclog.model import NotFoundError, SvcError, single_tenant
from svclog.ruler.compat import merge_alerts_data, merge_rules_data
from svclog.serve.errors import BodyTooLarge, error_response

RULES_PREFIXES = ("/svc/api/v1/rules", "/loki/api/v1/rules", "/api/prom/rules")
COMPAT_PREFIXES = ("/compat/api/v1", "/prometheus/api/v1", "/api/prom/api/v1")
MAX_RULES_BODY = 8 << 20
YAML = "application/yaml"
_ACCEPTED = {"status": "success", "data": None, "errorType": "", "error": ""}


class Rulers(Protocol):
    """What the routes need of the rulers; errors are the rulers' own (SvcError -> 4xx)."""

    async def call(self, method: str, *args: Any) -> Any: ...

    async def on_all(self, method: str, *args: Any) -> list[Any]: ...


def _json(data: object, status: int = 200) -> Response:
    return Response(json.dumps(data, separators=(",", ":")), status_code=status, media_type="application/json")


def _compat_error(err: SvcError) -> Response:
    status = int(getattr(err, "status", 400))
    kind = "bad_data" if status == 400 else "server_error" if status >= 500 else "error"
    return _json({"status": "error", "data": None, "errorType": kind, "error": str(err)}, status)


def _segments(request: Request, prefix: str) -> list[str]:
    """The percent-decoded path segments after `prefix`."""
    raw = request.scope.get("raw_path")
    path = raw.decode("latin-1").split("?", 1)[0] if raw else urllib.parse.quote(request.url.path)
    rest = path[len(prefix) :] if path.startswith(prefix) else path.split(prefix, 1)[-1]
    return [urllib.parse.unquote(s) for s in rest.strip("/").split("/")] if rest.strip("/") else []


def configured_api_enabled() -> bool:
    """`ruler.enable_api` of the gateway's config (on when there is none yet: a bare app in tests)."""
    from svclog.serve import runtime

    try:
        return bool(runtime.config().ruler.enable_api)
    except KeyError:
        return True


def add_ruler_routes(
    app: FastAPI,
    get_ruler: Callable[[], Rulers],
    auth_enabled: bool | Callable[[], bool],
    api_enabled: bool | Callable[[], bool] = configured_api_enabled,
) -> FastAPI:
    def when_enabled(endpoint: Callable[[Request], Any]) -> Callable[[Request], Any]:
        async def guarded(request: Request) -> Response:
            if not (api_enabled() if callable(api_enabled) else api_enabled):
                return error_response(NotFoundError("404 page not found"))
            return await endpoint(request)

        return guarded

    def tenant_of(request: Request) -> str:
        enabled = auth_enabled() if callable(auth_enabled) else auth_enabled
        return single_tenant(request.headers.get("x-scope-orgid"), auth_enabled=enabled)

    async def call(method: str, *args: Any) -> Any:
        return await get_ruler().call(method, *args)

    def rules_endpoint(prefix: str, method: str):
        async def endpoint(request: Request) -> Response:
            try:
                return await _rules(request, prefix, method)
            except Exception as err:  # noqa: BLE001 - every failure becomes an HTTP answer
                return error_response(err)

        return endpoint

    async def _rules(request: Request, prefix: str, method: str) -> Response:
        tenant = tenant_of(request)
        parts = _segments(request, prefix)
        if len(parts) > 2 or (method != "GET" and not parts) or (method == "POST" and len(parts) != 1):
            raise NotFoundError("404 page not found")
        if method == "POST":
            body = await request.body()
            if len(body) > MAX_RULES_BODY:
                raise BodyTooLarge(f"rule group too large: {len(body)} > {MAX_RULES_BODY} bytes")
            await call("set_group", tenant, parts[0], body)
            return _json(_ACCEPTED, 202)
        if method == "DELETE":
            await (
                call("delete_group", tenant, *parts) if len(parts) == 2 else call("delete_namespace", tenant, *parts)
            )
            return _json(_ACCEPTED, 202)
        if not parts:
            text = await call("list_rules", tenant, request.query_params.get("labels"))
        elif len(parts) == 1:
            text = await call("get_namespace", tenant, parts[0])
        else:
            text = await call("get_group", tenant, *parts)
        return Response(text, status_code=200, media_type=YAML)

    async def compat_rules(request: Request) -> Response:
        try:
            tenant = tenant_of(request)
            params = request.query_params
            args = (
                tenant,
                params.get("type"),
                params.getlist("file"),
                params.getlist("rule_group"),
                params.getlist("rule_name"),
            )
            parts = await get_ruler().on_all("compat_rules", *args)
            return _json({"status": "success", "data": merge_rules_data(parts)})
        except Exception as err:  # noqa: BLE001 - every failure becomes an HTTP answer
            return _compat_failure(err)

    async def compat_alerts(request: Request) -> Response:
        try:
            tenant = tenant_of(request)
            parts = await get_ruler().on_all("compat_alerts", tenant)
            return _json({"status": "success", "data": merge_alerts_data(parts)})
        except Exception as err:  # noqa: BLE001 - every failure becomes an HTTP answer
            return _compat_failure(err)

    for prefix in RULES_PREFIXES:
        for method in ("GET", "POST", "DELETE"):
            endpoint = when_enabled(rules_endpoint(prefix, method))
            app.add_api_route(prefix, endpoint, methods=[method], include_in_schema=False)
            app.add_api_route(prefix + "/{rest:path}", endpoint, methods=[method], include_in_schema=False)
    for prefix in COMPAT_PREFIXES:
        app.add_api_route(prefix + "/rules", when_enabled(compat_rules), methods=["GET"], include_in_schema=False)
        app.add_api_route(prefix + "/alerts", when_enabled(compat_alerts), methods=["GET"], include_in_schema=False)
    return app


def _compat_failure(err: Exception) -> Response:
    return _compat_error(err) if isinstance(err, SvcError) else error_response(err)
