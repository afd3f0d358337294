"""`GET|POST /svc/api/v1/patterns` (and `/loki/...`): mined log patterns of the selected streams."""

from __future__ import annotations

import json
from typing import Any, Protocol

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
)
from svclog.serve.errors import error_response, query_error_response
from svclog.serve.request_params import read_params
from svclog.serve.tenants import Tenants

DISABLED = "pattern ingester is not enabled: set pattern_ingester.enabled: true to query patterns"


class PatternQueries(Protocol):
    """The pattern ingester's query (svclog/actors/service_clients.PatternClient)."""

    async def patterns(self, tenant: str, matchers: list[Matcher], start: int, end: int, step: int) -> Any: ...


class PatternHandlers:
    """`patterns` is the pattern ingester's client; None when the component is disabled (404)."""

    def __init__(self, patterns: PatternQueries | None, tenants: Tenants):
        self.patterns_client = patterns
        self.tenants = tenants

    async def patterns(self, request: Request) -> Response:
        client = self.patterns_client
        if client is None:  # pattern_ingester.enabled is false
            return error_response(NotFoundError(DISABLED))
        try:
            tenant = self.tenants.one(request.headers)
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
            data = await client.patterns(tenant, list(selector.matchers), start, end, step)
        except Exception as err:  # noqa: BLE001 - typed user errors -> 4xx, anything else -> 500
            return query_error_response(err)
        body = json.dumps({"status": "success", "data": data}, ensure_ascii=False, separators=(",", ":"))
        return Response(body.encode(), media_type="application/json")
