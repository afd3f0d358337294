"""Ruler routes: the rules API (YAML) and the metrics-system-compatible rules/alerts views (JSON).

Rules API under `/svc/api/v1/rules`, `/loki/api/v1/rules` and `/api/prom/rules`;
compat views under `/compat/api/v1/{rules,alerts}`, `/prometheus/api/v1/...` and
`/api/prom/api/v1/...`. Namespace and group names are taken from the raw request path
and percent-decoded one segment at a time, so a namespace holding `%2F` works.
The handlers get the rulers' client (svclog/actors/service_clients.RulerClient): any ruler
answers the rules API; when several rulers share the groups the compat views ask each of them
and merge the answers. With `ruler.enable_api` false every route here answers 404, as the
reference registers none of them then.
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any, Protocol

from starlette.convertors import Convertor, register_url_convertor
from starlette.requests import Request
from starlette.responses import Response

from svclog.model import NotFoundError, SvcError
from svclog.ruler.compat import merge_alerts_data, merge_rules_data
from svclog.serve.errors import BodyTooLarge, error_response
from svclog.serve.tenants import Tenants


class Segments(Convertor[str]):
    """One or more non-empty path segments: `ns`, `ns/group` (a trailing slash or an empty
    segment is another path, 404, as in the reference's router)."""

    regex = "[^/]+(?:/[^/]+)*"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("segments", Segments())
REST = "/{rest:segments}"  # a rules route's namespace/group tail
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


class RulerHandlers:
    """The rules API and the compat views; with `api_enabled` false every one answers 404."""

    def __init__(self, rulers: Rulers, tenants: Tenants, api_enabled: bool = True):
        self.rulers = rulers
        self.tenants = tenants
        self.api_enabled = api_enabled

    async def rules_get(self, request: Request) -> Response:
        return await self._rules(request, "GET")

    async def rules_post(self, request: Request) -> Response:
        return await self._rules(request, "POST")

    async def rules_delete(self, request: Request) -> Response:
        return await self._rules(request, "DELETE")

    async def _rules(self, request: Request, method: str) -> Response:
        if not self.api_enabled:
            return error_response(NotFoundError("404 page not found"))
        try:
            prefix = request.scope["route"].path.removesuffix(REST)  # the matched row's prefix
            return await self._rules_call(request, prefix, method)
        except Exception as err:  # noqa: BLE001 - every failure becomes an HTTP answer
            return error_response(err)

    async def _rules_call(self, request: Request, prefix: str, method: str) -> Response:
        tenant = self.tenants.one(request.headers)
        parts = _segments(request, prefix)
        if len(parts) > 2 or (method != "GET" and not parts) or (method == "POST" and len(parts) != 1):
            raise NotFoundError("404 page not found")
        call = self.rulers.call
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

    async def compat_rules(self, request: Request) -> Response:
        if not self.api_enabled:
            return error_response(NotFoundError("404 page not found"))
        try:
            tenant = self.tenants.one(request.headers)
            params = request.query_params
            args = (
                tenant,
                params.get("type"),
                params.getlist("file"),
                params.getlist("rule_group"),
                params.getlist("rule_name"),
            )
            parts = await self.rulers.on_all("compat_rules", *args)
            return _json({"status": "success", "data": merge_rules_data(parts)})
        except Exception as err:  # noqa: BLE001 - every failure becomes an HTTP answer
            return _compat_failure(err)

    async def compat_alerts(self, request: Request) -> Response:
        if not self.api_enabled:
            return error_response(NotFoundError("404 page not found"))
        try:
            tenant = self.tenants.one(request.headers)
            parts = await self.rulers.on_all("compat_alerts", tenant)
            return _json({"status": "success", "data": merge_alerts_data(parts)})
        except Exception as err:  # noqa: BLE001 - every failure becomes an HTTP answer
            return _compat_failure(err)


def _compat_failure(err: Exception) -> Response:
    return _compat_error(err) if isinstance(err, SvcError) else error_response(err)
