"""`GET|POST /svc/api/v1/patterns` (and `/loki/...`): mined log patterns of the selected streams."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response

from svclog.frontend.params import default_step
from svclog.logql.parser import parse_selector
from svclog.model import (
    NS,
    Matcher,
    NotFoundError,
    ValidationError,
    now_ns,
    parse_step,
    parse_timestamp,
    single_tenant,
)
from svclog.serve.errors import error_response, query_error_response
from svclog.serve.request_params import read_params

PATTERN_PATHS = ("/svc/api/v1/patterns", "/loki/api/v1/patterns")
DISABLED = "pattern ingester is not enabled: set pattern_ingester.enabled: true to query patterns"


class PatternQueries(Protocol):
    """The pattern ingester's query (svclog/actors/service_clients.PatternClient)."""

    async def patterns(self, tenant: str, matchers: list[Matcher], start: int, end: int, step: int) -> Any: ...


def add_pattern_routes(
    app: FastAPI, get_pattern_actor: Callable[[], PatternQueries | None] | None, auth_enabled: bool | Callable[[], bool]
) -> FastAPI:
    """`get_pattern_actor` returns the pattern ingester's client; None when the component is disabled."""

    async def patterns(request: Request) -> Response:
        actor = get_pattern_actor() if get_pattern_actor is not None else None
        if actor is None:  # pattern_ingester.enabled is false
            return error_response(NotFoundError(DISABLED))
        try:
            tenant = single_tenant(
                request.headers.get("X-Scope-OrgID"),
                auth_enabled=auth_enabled() if callable(auth_enabled) else auth_enabled,
            )
            params = await read_params(request)
            query = params.get("query")
            if not query:
                raise ValidationError('query parameter is required: a stream selector like {app="api"}')
            selector = parse_selector(query)
            end = parse_timestamp(params.get("end"), now_ns())
            start = parse_timestamp(params.get("start"), end - 3600 * NS)
            if end < start:
                raise ValidationError("end timestamp must not be before start time")
            step_text = params.get("step")
            step = parse_step(step_text) if step_text else default_step(start, end)
            if step <= 0:
                raise ValidationError(
                    "zero or negative query resolution step widths are not accepted. Try a positive integer"
                )
            data = await actor.patterns(tenant, list(selector.matchers), start, end, step)
        except Exception as err:  # noqa: BLE001 - typed user errors -> 4xx, anything else -> 500
            return query_error_response(err)
        body = json.dumps({"status": "success", "data": data}, ensure_ascii=False, separators=(",", ":"))
        return Response(body.encode(), media_type="application/json")

    for path in PATTERN_PATHS:
        app.add_api_route(path, patterns, methods=["GET", "POST"], include_in_schema=False)
    return app
