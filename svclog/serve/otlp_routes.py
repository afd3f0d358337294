"""The OTLP/HTTP logs endpoint, POST /otlp/v1/logs, and a helpful 404 for every other /otlp path."""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from svclog.model import NotFoundError, PushStream, SvcError, single_tenant
from svclog.serve import telemetry
from svclog.serve.codecs.otlp import decode_otlp_logs, encode_export_response
from svclog.serve.codecs.push import _media_type
from svclog.serve.errors import ErrorReply, error_response
from svclog.serve.handlers import _read_capped

OTLP_LOGS_PATH = "/otlp/v1/logs"
WRONG_PATH_MESSAGE = (
    "404 page not found: {path} is not an OTLP endpoint. Logs are accepted at POST "
    + OTLP_LOGS_PATH + "; configure the OpenTelemetry exporter's endpoint as http://<host>:<port>/otlp "
    "(the exporter appends /v1/logs itself)"
)

Push = Callable[[str, list[PushStream]], Awaitable[Any]]


def add_otlp_routes(app: FastAPI, push: Push, auth_enabled: bool | Callable[[], bool],
                    max_body_bytes: int | Callable[[], int],
                    max_decompressed_bytes: int | Callable[[], int]) -> FastAPI:
    """Settings may be callables, read per request (they are known only once the service starts)."""

    def setting(value):
        return value() if callable(value) else value

    """Register the OTLP routes on `app`; `push(tenant, streams)` ingests decoded streams."""

    async def otlp_logs(request: Request) -> Response:
        try:
            tenant = single_tenant(request.headers.get("x-scope-orgid"), auth_enabled=setting(auth_enabled))
            body = await _read_capped(request, setting(max_body_bytes))
            content_type = request.headers.get("content-type")
            # Decoding is CPU-bound; keep it off the event loop.
            streams = await asyncio.to_thread(
                decode_otlp_logs, body, content_type, request.headers.get("content-encoding"),
                max_decompressed_bytes=setting(max_decompressed_bytes),
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
            return PlainTextResponse("405 method not allowed: use POST\n", status_code=405,
                                     headers={"Allow": "POST"})
        return error_response(NotFoundError(WRONG_PATH_MESSAGE.format(path=request.url.path)))

    any_method = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
    app.add_api_route(OTLP_LOGS_PATH, otlp_logs, methods=["POST"], include_in_schema=False)
    app.add_api_route("/otlp", wrong_path, methods=any_method, include_in_schema=False)
    app.add_api_route("/otlp/{rest:path}", wrong_path, methods=any_method, include_in_schema=False)
    return app

