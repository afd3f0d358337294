"""The push and query handlers: read parameters and tenants, call the backend, encode responses.

The backend (svclog/serve/backend.py's Backend protocol) does the work; the Ray Serve
implementation forwards to the distributor and query frontend hosted by the gateway replica,
tests/fuzz/harness.py's to in-process components.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from svclog.config.limits import LimitsConfig
from svclog.frontend import params as qp
from svclog.logql.checks import empty_query_error
from svclog.logql.printer import format_query
from svclog.model import NotFoundError, ParseError, SvcError, ValidationError
from svclog.querier.source import TENANT_LABEL
from svclog.querier.volume import cap_volume_series, validate_aggregate_by, volume_fetch_limit
from svclog.scheduler.actor_path import actor_path_from_headers
from svclog.serve import drilldown, json_body, telemetry
from svclog.serve.backend import Backend
from svclog.serve.codecs.otlp import DEFAULT_INDEX_LABELS
from svclog.serve.codecs.parquet import to_parquet, wants_parquet
from svclog.serve.errors import BodyTooLarge, error_response, query_error_response
from svclog.serve.legacy import legacy_query_body, legacy_values_body
from svclog.serve.query_headers import encoding_flags, query_tags, with_encoding_flags
from svclog.serve.query_log import log_query
from svclog.serve.request_params import read_params
from svclog.serve.tenants import Tenants

log = logging.getLogger("svclog")


def _json(data: Any, status: int = 200) -> Response:
    return json_body.response(data, status)


class QueryHandlers:
    """Push, queries, metadata, Logs Drilldown, /metrics, /config and buildinfo."""

    def __init__(
        self,
        backend: Backend,
        tenants: Tenants,
        *,
        max_body_bytes: int,
        limits_for: Callable[[str], LimitsConfig] = lambda tenant: LimitsConfig(),
        config_yaml: Callable[[str | None], str] | None = None,
        pattern_ingester_enabled: bool = False,
        otlp_index_labels: tuple[str, ...] = DEFAULT_INDEX_LABELS,
    ):
        self.backend = backend
        self.tenants = tenants
        self.max_body_bytes = max_body_bytes
        self.limits_for = limits_for  # per tenant (runtime overrides): volume_enabled, volume_max_series
        self.config_yaml = config_yaml  # mode -> the config as YAML
        self.pattern_ingester_enabled = pattern_ingester_enabled  # drilldown-limits reports these two
        self.otlp_index_labels = otlp_index_labels

    def _tenant(self, request: Request) -> str:
        return self.tenants.one(request.headers)

    def _query_tenants(self, request: Request) -> list[str]:
        return self.tenants.for_query(request.headers)

    # ------------------------------------------------------------ ingest

    async def push(self, request: Request) -> Response:
        try:
            tenant = self._tenant(request)
            body = await _read_capped(request, self.max_body_bytes)
            await self.backend.push(
                tenant, body, request.headers.get("content-type"), request.headers.get("content-encoding")
            )
            telemetry.record_push(tenant, 204)
            return Response(status_code=204)
        except SvcError as err:
            telemetry.record_push("", int(getattr(err, "status", 400)))
            return error_response(err)

    # ------------------------------------------------------------ queries

    async def query_range(self, request: Request) -> Response:
        return await self._query(request, instant=False)

    async def query(self, request: Request) -> Response:
        return await self._query(request, instant=True)

    async def _query(self, request: Request, *, instant: bool) -> Response:
        began = time.perf_counter()
        endpoint = "query" if instant else "query_range"
        tenants: list[str] = []
        req: qp.RangeRequest | None = None
        tags = query_tags(request.headers)
        try:
            tenants = self._query_tenants(request)
            params = await read_params(request)
            form = {k: v for k, v in reversed(params.pairs)}
            req = qp.instant_request(form) if instant else qp.range_request(form)
            parquet = wants_parquet(request.headers.get("accept"))
            req = replace(req, encoding_flags=encoding_flags(request.headers), encoded_values=not parquet)
            data = await self.backend.query(tenants, req, actor_path_from_headers(request.headers))
            seconds = time.perf_counter() - began
            telemetry.record_query(endpoint, 200, seconds)
            log_query(tenants, req, 200, seconds, data, tags)
            if parquet:
                return Response(to_parquet(data), media_type="application/vnd.apache.parquet")
            body = {"status": "success", "data": with_encoding_flags(data, req.encoding_flags)}
            return json_body.response(body, give_way=self.backend.give_way)
        except SvcError as err:
            status, seconds = int(getattr(err, "status", 400)), time.perf_counter() - began
            telemetry.record_query(endpoint, status, seconds)
            log_query(tenants, req, status, seconds, None, tags)
            return query_error_response(err, forwarded=not instant)

    async def legacy_query(self, request: Request) -> Response:
        try:
            tenants = self._query_tenants(request)
            params = await read_params(request)
            form = {k: v for k, v in reversed(params.pairs)}
            req = qp.range_request(form)
            data = await self.backend.query(tenants, req)
            return _json(legacy_query_body(data))
        except SvcError as err:
            return query_error_response(err, forwarded=True)

    async def labels(self, request: Request) -> Response:
        return await self._labels(request, legacy=False)

    async def legacy_labels(self, request: Request) -> Response:
        return await self._labels(request, legacy=True)

    async def label_values(self, request: Request) -> Response:
        return await self._label_values(request, legacy=False)

    async def legacy_label_values(self, request: Request) -> Response:
        return await self._label_values(request, legacy=True)

    async def _labels(self, request: Request, *, legacy: bool) -> Response:
        try:
            tenants = self._query_tenants(request)
            params = await read_params(request)
            start, end = qp.labels_range(_first_values(params))
            names = await self.backend.label_names(tenants, start, end, params.get("query") or None)
            if len(tenants) > 1:  # as the reference: the virtual tenant label, even with no data
                names = sorted({*names, TENANT_LABEL})
            return _json(legacy_values_body(names) if legacy else {"status": "success", "data": names})
        except SvcError as err:
            return query_error_response(err)

    async def _label_values(self, request: Request, *, legacy: bool) -> Response:
        try:
            tenants = self._query_tenants(request)
            params = await read_params(request)
            start, end = qp.labels_range(_first_values(params))
            name = request.path_params["name"]
            if name == TENANT_LABEL and self.tenants.multi_tenant_queries:
                values = tenants  # the reference's multi-tenant reader names the request's tenants
            else:
                values = await self.backend.label_values(tenants, name, start, end, params.get("query") or None)
            return _json(legacy_values_body(values) if legacy else {"status": "success", "data": values})
        except SvcError as err:
            return query_error_response(err)

    async def series(self, request: Request) -> Response:
        try:
            tenants = self._query_tenants(request)
            params = await read_params(request)
            start, end = qp.labels_range(_first_values(params))
            selectors = params.getlist("match[]") or params.getlist("match")  # none: every series
            data = await self.backend.series(tenants, selectors, start, end)
            return _json({"status": "success", "data": data})
        except SvcError as err:
            return query_error_response(err)

    async def index_stats(self, request: Request) -> Response:
        try:
            tenants = self._query_tenants(request)
            params = await read_params(request)
            query = params.get("query")
            if not query:
                raise empty_query_error()  # the reference parses a missing query as ""
            start, end = qp.labels_range(_first_values(params))
            _check_order(start, end)
            return _json(await self.backend.index_stats(tenants, query, start, end))
        except SvcError as err:
            return query_error_response(err)

    async def volume(self, request: Request) -> Response:
        return await self._volume(request, ranged=False)

    async def volume_range(self, request: Request) -> Response:
        return await self._volume(request, ranged=True)

    async def _volume(self, request: Request, *, ranged: bool) -> Response:
        try:
            tenants = self._query_tenants(request)
            limits = [self.limits_for(tenant) for tenant in tenants]
            disabled = [tenant for tenant, tenant_limits in zip(tenants, limits) if not tenant_limits.volume_enabled]
            if disabled:
                raise NotFoundError(
                    f"volume is not enabled for tenant {disabled[0]!r}: "
                    "set limits_config.volume_enabled: true (or a per-tenant override)"
                )
            params = await read_params(request)
            form = _first_values(params)
            query = form.get("query")
            if not query:
                raise empty_query_error()  # the reference parses a missing query as ""
            start, end = qp.time_range(form, qp.HOUR)
            _check_order(start, end)
            step = _volume_step(form, start, end) if ranged else None
            targets = tuple(t.strip() for t in (form.get("targetLabels") or "").split(",") if t.strip())
            limit = qp.limit_param(form)
            max_series = min(tenant_limits.volume_max_series for tenant_limits in limits)
            data = await self.backend.volume(
                tenants,
                query,
                start,
                end,
                volume_fetch_limit(limit, max_series),
                targets,
                validate_aggregate_by(form.get("aggregateBy")),
                step,
            )
            return _json({"status": "success", "data": cap_volume_series(data, limit, max_series)})
        except SvcError as err:
            return query_error_response(err)

    async def format_query(self, request: Request) -> Response:
        try:
            params = await read_params(request)
            return _json({"status": "success", "data": format_query(params.get("query") or "")})
        except ParseError as err:  # the reference's own JSON for a query that does not parse
            return _json({"status": "invalid-query", "error": str(err)}, status=400)
        except SvcError as err:
            return error_response(err)

    # ------------------------------------------------------------ status and admin

    async def metrics(self, request: Request) -> Response:
        try:
            stats = await self.backend.ingester_stats()
        except Exception:  # metrics must render even while an ingester restarts
            log.exception("ingester stats")
            stats = []
        body, content_type = telemetry.render(stats)
        return Response(body, media_type=content_type)

    async def buildinfo(self, request: Request) -> Response:
        return _json(telemetry.build_info())

    async def config(self, request: Request) -> Response:
        mode = request.query_params.get("mode")
        if mode not in (None, "", "diffs", "defaults"):
            return PlainTextResponse("invalid mode: use diffs or defaults\n", status_code=400)
        text = self.config_yaml(mode or None) if self.config_yaml else ""
        wants_yaml = "application/yaml" in request.headers.get("accept", "")
        return PlainTextResponse(text, media_type="application/yaml" if wants_yaml else "text/plain; charset=utf-8")

    # ------------------------------------------------------------ Logs Drilldown (bare answer objects)

    async def detected_labels(self, request: Request) -> Response:
        try:
            tenants = self._query_tenants(request)
            form = _first_values(await read_params(request))
            return _json(await drilldown.detected_labels(self.backend, tenants, form))
        except SvcError as err:
            return query_error_response(err)

    async def detected_fields(self, request: Request) -> Response:
        return await self._detected_fields(request, None)

    async def detected_field_values(self, request: Request) -> Response:
        return await self._detected_fields(request, request.path_params["name"])

    async def _detected_fields(self, request: Request, name: str | None) -> Response:
        try:
            tenants = self._query_tenants(request)
            form = _first_values(await read_params(request))
            body = await drilldown.detected_fields(
                self.backend, tenants, form, name, actor_path_from_headers(request.headers)
            )
            return _json(body)
        except SvcError as err:
            return query_error_response(err, forwarded=True)

    async def drilldown_limits(self, request: Request) -> Response:
        try:
            tenant = self._tenant(request)
        except SvcError as err:  # the reference answers every tenant error here as unauthorized
            return PlainTextResponse(f"{err}\n", status_code=401)
        try:
            limits = self.limits_for(tenant)
            return _json(
                drilldown.drilldown_limits(
                    limits,
                    self.otlp_index_labels,
                    pattern_ingester_enabled=self.pattern_ingester_enabled,
                    version=telemetry.build_info()["version"],
                )
            )
        except SvcError as err:
            return query_error_response(err)


def _first_values(params) -> dict[str, str]:
    return {k: v for k, v in reversed(params.pairs)}


def _check_order(start: int, end: int) -> None:
    if end < start:
        raise ValidationError("end timestamp must not be before or equal to start time")


def _volume_step(form: dict[str, str], start: int, end: int) -> int:
    """volume_range's step, bounded like query_range's: positive, at most 11,000 points."""
    step = qp.parse_step_param(form["step"]) if form.get("step") else qp.default_step(start, end)
    qp.check_aligned(start, end, step)  # step-aligned bounds must stay int64 (start=-2^63 was a 500)
    if (end - start) / step > qp.MAX_POINTS:
        raise ValidationError(
            "exceeded maximum resolution of 11,000 points per timeseries. "
            "Try increasing the value of the step parameter"
        )
    return step


async def _read_capped(request: Request, cap: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > cap:
        raise BodyTooLarge(f"request body too large: {declared} bytes > limit {cap}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            raise BodyTooLarge(f"request body too large: more than {cap} bytes")
        chunks.append(chunk)
    return b"".join(chunks)
