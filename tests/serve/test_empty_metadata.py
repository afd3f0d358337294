"""Empty structured-metadata values are dropped at ingest whatever the format (JSON,
snappy protobuf, OTLP JSON), as the reference's distributor drops them; read back over
HTTP with categorize-labels, so the stored metadata is what the query shows."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from svclog.model import NS, Entry, Labels, PushStream, now_ns
from svclog.serve.codecs.push import encode_push_protobuf
from tests.fuzz.harness import InProcessBackend, build_app, harness_config

TS = (now_ns() // NS - 600) * NS


def json_body() -> tuple[str, bytes, dict, str]:
    body = {"streams": [{"stream": {"app": "a"}, "values": [[str(TS), "line", {"empty": "", "kept": "v"}]]}]}
    return "/loki/api/v1/push", json.dumps(body).encode(), {"Content-Type": "application/json"}, '{app="a"}'


def protobuf_body() -> tuple[str, bytes, dict, str]:
    streams = [PushStream(Labels.from_dict({"app": "a"}), [Entry(TS, "line", (("empty", ""), ("kept", "v")))])]
    body = encode_push_protobuf(streams)  # snappy-compressed, as shippers send it
    return "/loki/api/v1/push", body, {"Content-Type": "application/x-protobuf"}, '{app="a"}'


def otlp_body() -> tuple[str, bytes, dict, str]:
    record = {
        "timeUnixNano": str(TS),
        "body": {"stringValue": "line"},
        "attributes": [{"key": "empty", "value": {"stringValue": ""}}, {"key": "kept", "value": {"stringValue": "v"}}],
    }
    body = {
        "resourceLogs": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "a"}}]},
                "scopeLogs": [{"logRecords": [record]}],
            }
        ]
    }
    return "/otlp/v1/logs", json.dumps(body).encode(), {"Content-Type": "application/json"}, '{service_name="a"}'


@pytest.mark.parametrize("make_body", [json_body, protobuf_body, otlp_body])
def test_empty_metadata_values_are_not_stored(tmp_path, make_body):
    app = build_app(InProcessBackend(harness_config(str(tmp_path)), str(tmp_path)))
    path, body, headers, query = make_body()

    async def send():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svclog") as client:
            pushed = await client.post(path, content=body, headers={"X-Scope-OrgID": "t", **headers})
            assert pushed.status_code in (200, 204), pushed.text
            return await client.get(
                "/loki/api/v1/query_range",
                params={"query": query, "start": str(TS - NS), "end": str(TS + NS)},
                headers={"X-Scope-OrgID": "t", "X-Svc-Response-Encoding-Flags": "categorize-labels"},
            )

    response = asyncio.run(send())
    assert response.status_code == 200, response.text
    (stream,) = response.json()["data"]["result"]
    ((_, line, labels),) = stream["values"]
    assert line == "line"
    assert labels["structuredMetadata"].get("kept") == "v"
    assert "empty" not in labels["structuredMetadata"]
