"""The OTLP/HTTP logs endpoint, POST /otlp/v1/logs, and a helpful 404 for every other /otlp path."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from svclog.config import limits_for as config_limits_for
from svclog.config.limits import LimitsConfig
from svclog.model import NotFoundError, PushStream, SvcError, single_tenant
from svclog.serve import runtime, telemetry
from svclog.serve.codecs.otlp import (
    DEFAULT_INDEX_LABELS,
    OtlpRules,
    decode_otlp_logs,
    encode_export_response,
    otlp_rules,
)
from svclog.serve.codecs.push import _media_type
from svclog.serve.errors import ErrorReply, error_response
from svclog.serve.handlers import _read_capped

OTLP_LOGS_PATH = "/otlp/v1/logs"
WRONG_PATH_MESSAGE = (
    "404 page not found: {path} is not an OTLP endpoint. Logs are accepted at POST "
    + OTLP_LOGS_PATH
    + "; configure the OpenTelemetry exporter's endpoint as http://<host>:<port>/otlp "
    "(the exporter appends /v1/logs itself)"
)

Push = Callable[[str, list[PushStream]], Awaitable[Any]]
# tenant -> (its otlp_config rules, its discover_service_name list)
TenantOtlp = Callable[[str], tuple[OtlpRules, tuple[str, ...]]]


class OtlpConfigError(SvcError):
    """The tenant's `limits_config.otlp_config` is malformed: the operator's error, not the client's."""

    status = 500


def rules_for(
    limits: LimitsConfig, default_index_labels: tuple[str, ...] = DEFAULT_INDEX_LABELS
) -> tuple[OtlpRules, tuple[str, ...]]:
    try:
        rules = otlp_rules(limits.otlp_config, default_index_labels)
    except (ValueError, TypeError) as err:
        raise OtlpConfigError(f"invalid limits_config.otlp_config: {err}") from None
    return rules, tuple(limits.discover_service_name)


def runtime_tenant_otlp(tenant: str) -> tuple[OtlpRules, tuple[str, ...]]:
    """The started service's per-tenant settings (defaults before it is configured, as in tests)."""
    try:
        cfg = runtime.config()
    except KeyError:
        return rules_for(LimitsConfig())
    defaults = cfg.distributor.otlp_config.get("default_resource_attributes_as_index_labels")
    return rules_for(config_limits_for(cfg, tenant), DEFAULT_INDEX_LABELS if defaults is None else tuple(defaults))


def add_otlp_routes(
    app: FastAPI,
    push: Push,
    auth_enabled: bool | Callable[[], bool],
    max_body_bytes: int | Callable[[], int],
    max_decompressed_bytes: int | Callable[[], int],
    tenant_otlp: TenantOtlp = runtime_tenant_otlp,
) -> FastAPI:
    """Settings may be callables, read per request (they are known only once the service starts);
    `tenant_otlp(tenant)` gives the tenant's otlp_config rules and service-name discovery list."""

    def setting(value):
        return value() if callable(value) else value

    """Register the OTLP routes on `app`; `push(tenant, streams)` ingests decoded streams."""

    async def otlp_logs(request: Request) -> Response:
        try:
            tenant = single_tenant(request.headers.get("x-scope-orgid"), auth_enabled=setting(auth_enabled))
            body = await _read_capped(request, setting(max_body_bytes))
            content_type = request.headers.get("content-type")
            rules, discover = tenant_otlp(tenant)
            # Decoding is CPU-bound; keep it off the event loop.
            streams = await asyncio.to_thread(
                decode_otlp_logs,
                body,
                content_type,
                request.headers.get("content-encoding"),
                max_decompressed_bytes=setting(max_decompressed_bytes),
                rules=rules,
                discover_service_name=discover,
            )
            outcome = await push(tenant, streams)
            if isinstance(outcome, ErrorReply):
                outcome.raise_()
        except SvcError as err:
            telemetry.record_push("", int(getattr(err, "status", 400)), 0, 0)
            return error_response(err)
        telemetry.record_push(tenant, 200, getattr(outcome, "lines", 0), getattr(outcome, "bytes", 0))
        # Decoding succeeded, so the content type is one of the two OTLP encodings.
        body, media_type = encode_export_response(_media_type(content_type))
        return Response(body, status_code=200, media_type=media_type)

    async def wrong_path(request: Request) -> Response:
        if request.url.path == OTLP_LOGS_PATH:
            return PlainTextResponse("405 method not allowed: use POST\n", status_code=405, headers={"Allow": "POST"})
        return error_response(NotFoundError(WRONG_PATH_MESSAGE.format(path=request.url.path)))

    any_method = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
    app.add_api_route(OTLP_LOGS_PATH, otlp_logs, methods=["POST"], include_in_schema=False)
    app.add_api_route("/otlp", wrong_path, methods=any_method, include_in_schema=False)
    app.add_api_route("/otlp/{rest:path}", wrong_path, methods=any_method, include_in_schema=False)
    return app
