"""POST /otlp/v1/logs over ASGI with a fake push, the wrong-path 404, and the SDK against the live route."""

from __future__ import annotations

import asyncio
import gzip
import socket
import threading
import time

import httpx
import pytest
from fastapi import FastAPI
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from svclog.model import PushStream, RateLimitError, ValidationError
from svclog.serve.app import Services
from svclog.serve.codecs.otlp import encode_otlp_logs_json
from svclog.serve.errors import ErrorReply
from tests.fuzz.harness import app_with

PROTO = "application/x-protobuf"
JSON = "application/json"


class FakePush:
    def __init__(self, result: object = None, error: Exception | None = None):
        self.calls: list[tuple[str, list[PushStream]]] = []
        self.result = result
        self.error = error

    async def __call__(self, tenant: str, streams: list[PushStream]) -> object:
        self.calls.append((tenant, streams))
        if self.error is not None:
            raise self.error
        return self.result

    async def push_decoded(self, tenant: str, streams: list[PushStream]) -> object:
        return await self(tenant, streams)


def make_app(push: FakePush, *, auth_enabled: bool = False, max_body_bytes: int = 1 << 20) -> FastAPI:
    return app_with(
        Services(backend=push), auth_enabled=auth_enabled, max_body_bytes=max_body_bytes, max_decompressed_bytes=1 << 20
    )


def post(
    app: FastAPI,
    path: str = "/otlp/v1/logs",
    body: bytes = b"",
    method: str = "POST",
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://svclog") as client:
            return await client.request(method, path, content=body, headers=headers or {})

    return asyncio.run(send())


def sample_request() -> ExportLogsServiceRequest:
    request = ExportLogsServiceRequest()
    resource_logs = request.resource_logs.add()
    resource_logs.resource.attributes.add(key="service.name").value.string_value = "api"
    record = resource_logs.scope_logs.add().log_records.add(time_unix_nano=42, severity_text="ERROR")
    record.body.string_value = "boom"
    return request


def assert_pushed(push: FakePush, tenant: str = "fake") -> None:
    [(pushed_tenant, [stream])] = push.calls
    assert pushed_tenant == tenant
    assert stream.labels.to_dict() == {"service_name": "api"}
    assert [(e.ts, e.line, e.metadata) for e in stream.entries] == [(42, "boom", (("severity_text", "ERROR"),))]


def test_protobuf_push_answers_an_empty_protobuf_response():
    push = FakePush()
    response = post(make_app(push), body=sample_request().SerializeToString(), headers={"content-type": PROTO})
    assert response.status_code == 200
    assert response.headers["content-type"] == PROTO and response.content == b""
    assert_pushed(push)


def test_json_push_answers_an_empty_json_response():
    push = FakePush()
    response = post(make_app(push), body=encode_otlp_logs_json(sample_request()), headers={"content-type": JSON})
    assert response.status_code == 200
    assert response.headers["content-type"] == JSON and response.json() == {}
    assert_pushed(push)


def test_gzip_push_with_a_tenant():
    push = FakePush()
    response = post(
        make_app(push, auth_enabled=True),
        body=gzip.compress(sample_request().SerializeToString()),
        headers={"content-type": PROTO, "content-encoding": "gzip", "x-scope-orgid": "team-a"},
    )
    assert response.status_code == 200
    assert_pushed(push, "team-a")


@pytest.mark.parametrize(
    ("headers", "status", "message"),
    [
        ({"content-type": PROTO}, 401, "no org id"),
        ({"content-type": PROTO, "x-scope-orgid": "a|b"}, 400, "multiple org IDs"),
    ],
)
def test_tenant_errors(headers, status, message):
    push = FakePush()
    response = post(make_app(push, auth_enabled=True), body=sample_request().SerializeToString(), headers=headers)
    assert response.status_code == status and message in response.text
    assert push.calls == []


@pytest.mark.parametrize(
    ("body", "headers", "message"),
    [
        (b"\xff\xff", {"content-type": PROTO}, "proto"),
        (b"{", {"content-type": JSON}, "OTLP/JSON"),
        (b"{}", {"content-type": "text/plain"}, "not supported"),
        (b"{}", {"content-type": JSON, "content-encoding": "gzip"}, "gzip"),
    ],
)
def test_malformed_bodies_are_400(body, headers, message):
    push = FakePush()
    response = post(make_app(push), body=body, headers=headers)
    assert response.status_code == 400 and message in response.text
    assert push.calls == []


def test_body_over_the_limit_is_413():
    push = FakePush()
    response = post(make_app(push, max_body_bytes=8), body=b"x" * 64, headers={"content-type": PROTO})
    assert response.status_code == 413
    assert push.calls == []


@pytest.mark.parametrize(
    ("push", "status", "message"),
    [
        (FakePush(error=ValidationError("stream '{}' has label name too long")), 400, "too long"),
        (FakePush(error=RateLimitError("ingestion rate limit exceeded")), 429, "rate limit"),
        (FakePush(result=ErrorReply(503, "no ingesters")), 503, "no ingesters"),
    ],
)
def test_push_errors_map_to_statuses(push, status, message):
    response = post(make_app(push), body=sample_request().SerializeToString(), headers={"content-type": PROTO})
    assert response.status_code == status and message in response.text


@pytest.mark.parametrize("path", ["/otlp/v1/logs/v1/logs", "/otlp/v1/traces", "/otlp", "/otlp/"])
def test_wrong_paths_get_a_clear_404(path):
    push = FakePush()
    response = post(make_app(push), path=path, body=b"{}", headers={"content-type": JSON})
    assert response.status_code == 404
    assert "/otlp/v1/logs" in response.text and "http://<host>:<port>/otlp" in response.text
    assert path.rstrip("/") in response.text
    assert push.calls == []


def test_other_methods_on_the_logs_path_answer_as_the_reference_router():
    # GET and DELETE: a later methods-first route of the reference takes them (404); PUT: an empty 405
    for method in ("GET", "DELETE"):
        response = post(make_app(FakePush()), method=method)
        assert (response.status_code, response.text) == (404, "404 page not found\n")
    response = post(make_app(FakePush()), method="PUT")
    assert (response.status_code, response.content) == (405, b"") and "allow" not in response.headers


# ---------------------------------------------------------------- the SDK against the route over real HTTP


def _serve(app: FastAPI):
    import uvicorn

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    return server, thread, port


def test_opentelemetry_sdk_export_succeeds_against_the_route(monkeypatch):
    from opentelemetry._logs import SeverityNumber
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import LogRecordExportResult, SimpleLogRecordProcessor
    from opentelemetry.sdk.resources import Resource

    results: list[LogRecordExportResult] = []

    class RecordingExporter(OTLPLogExporter):
        def export(self, batch):  # type: ignore[no-untyped-def]
            results.append(super().export(batch))
            return results[-1]

    push = FakePush()
    server, thread, port = _serve(make_app(push))
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{port}/otlp")
        exporter = RecordingExporter()
        provider = LoggerProvider(resource=Resource.create({"service.name": "sdk-live"}))
        provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
        provider.get_logger("live").emit(body="hello over http", severity_number=SeverityNumber.INFO)
        provider.force_flush()
        provider.shutdown()
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    assert results == [LogRecordExportResult.SUCCESS]
    [(tenant, [stream])] = push.calls
    assert tenant == "fake" and stream.labels.get("service_name") == "sdk-live"
    assert [e.line for e in stream.entries] == ["hello over http"]
    assert dict(stream.entries[0].metadata)["severity_number"] == "9"
