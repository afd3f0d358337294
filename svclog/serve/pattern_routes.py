"""`GET|POST /svc/api/v1/patterns` (and `/loki/...`): mined log patterns of the selected streams."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import Response

from svclog.config.limits import LimitsConfig
from svclog.frontend.params import default_step
from svclog.logql.checks import empty_query_error
from svclog.logql.engine.guard import QueryLimits, smallest_positive
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
from svclog.pattern.ingester import merge_tenants
from svclog.serve import json_body
from svclog.serve.errors import error_response, query_error_response
from svclog.serve.request_params import read_params
from svclog.serve.tenants import Tenants

DISABLED = "pattern ingester is not enabled: set pattern_ingester.enabled: true to query patterns"


class PatternQueries(Protocol):
    """The pattern ingester's query (svclog/actors/service_clients.PatternClient)."""

    async def patterns(
        self, tenant: str, matchers: list[Matcher], start: int, end: int, step: int, limits: QueryLimits | None = None
    ) -> Any: ...


class PatternHandlers:
    """`patterns` is the pattern ingester's client; None when the component is disabled (404)."""

    def __init__(
        self,
        patterns: PatternQueries | None,
        tenants: Tenants,
        limits_for: Callable[[str], LimitsConfig] = lambda tenant: LimitsConfig(),
    ):
        self.patterns_client = patterns
        self.tenants = tenants
        self.limits_for = limits_for  # per tenant: query_timeout

    async def patterns(self, request: Request) -> Response:
        client = self.patterns_client
        if client is None:  # pattern_ingester.enabled is false
            return error_response(NotFoundError(DISABLED))
        try:
            tenants = self.tenants.for_query(request.headers)  # several: their answers merged
            # the deadline runs from the request's arrival: the strictest tenant's query_timeout
            limits = QueryLimits.starting_now(smallest_positive(self.limits_for(t).query_timeout for t in tenants), 0)
            params = await read_params(request)
            query = params.get("query")
            if not query:
                raise empty_query_error()  # the reference parses a missing query as ""
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
            matchers = list(selector.matchers)
            answers = await asyncio.gather(*(client.patterns(t, matchers, start, end, step, limits) for t in tenants))
            data = merge_tenants(list(answers))
        except Exception as err:  # noqa: BLE001 - typed user errors -> 4xx, anything else -> 500
            return query_error_response(err)
        return json_body.response({"status": "success", "data": data})
