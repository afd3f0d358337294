"""The OTLP/HTTP logs endpoint, POST /otlp/v1/logs, and a helpful 404 for every other /otlp path."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from svclog.config.limits import LimitsConfig
from svclog.model import NotFoundError, PushStream, SvcError
from svclog.serve import telemetry
from svclog.serve.backend import Backend
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
from svclog.serve.tenants import Tenants

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


def tenant_otlp_from(
    limits_for: Callable[[str], LimitsConfig], default_index_labels: tuple[str, ...] = DEFAULT_INDEX_LABELS
) -> TenantOtlp:
    """A tenant's otlp_config rules and discovery list from its limits (runtime overrides included)."""
    return lambda tenant: rules_for(limits_for(tenant), default_index_labels)


class OtlpHandlers:
    """`backend.push_decoded(tenant, streams)` ingests decoded streams; `tenant_otlp(tenant)` gives
    the tenant's otlp_config rules and service-name discovery list."""

    def __init__(
        self,
        backend: Backend,
        tenants: Tenants,
        *,
        max_body_bytes: int,
        max_decompressed_bytes: int,
        tenant_otlp: TenantOtlp = lambda tenant: rules_for(LimitsConfig()),
    ):
        self.backend = backend
        self.tenants = tenants
        self.max_body_bytes = max_body_bytes
        self.max_decompressed_bytes = max_decompressed_bytes
        self.tenant_otlp = tenant_otlp

    async def logs(self, request: Request) -> Response:
        try:
            tenant = self.tenants.one(request.headers)
            body = await _read_capped(request, self.max_body_bytes)
            content_type = request.headers.get("content-type")
            rules, discover = self.tenant_otlp(tenant)
            # Decoding is CPU-bound; keep it off the event loop.
            streams = await asyncio.to_thread(
                decode_otlp_logs,
                body,
                content_type,
                request.headers.get("content-encoding"),
                max_decompressed_bytes=self.max_decompressed_bytes,
                rules=rules,
                discover_service_name=discover,
            )
            outcome = await self.backend.push_decoded(tenant, streams)
            if isinstance(outcome, ErrorReply):
                outcome.raise_()
        except SvcError as err:
            telemetry.record_push("", int(getattr(err, "status", 400)), 0, 0)
            return error_response(err)
        telemetry.record_push(tenant, 200, getattr(outcome, "lines", 0), getattr(outcome, "bytes", 0))
        # Decoding succeeded, so the content type is one of the two OTLP encodings.
        body, media_type = encode_export_response(_media_type(content_type))
        return Response(body, status_code=200, media_type=media_type)

    async def wrong_path(self, request: Request) -> Response:
        """Every other /otlp path (and method): a 404 saying where logs go; another method on the
        logs path answers by the route table's rule."""
        if request.url.path == OTLP_LOGS_PATH:
            raise HTTPException(405)  # svclog/serve/app.py's framework_error answers it
        return error_response(NotFoundError(WRONG_PATH_MESSAGE.format(path=request.url.path)))
