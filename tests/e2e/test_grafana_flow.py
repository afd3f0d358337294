"""End to end: the calls Grafana 11/12 (Explore, Logs Drilldown) and logcli 3.x make, in the order a
user's session makes them, over real HTTP against the shared service."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from urllib.parse import urlencode

import httpx
import pytest
from websockets.asyncio.client import connect

pytestmark = pytest.mark.ray
TENANT = "e2e-grafana"
NS = 1_000_000_000


@pytest.fixture(scope="module")
def pushed(svc):
    """A checkout service logging JSON, an api logging logfmt, both with structured metadata."""
    run = uuid.uuid4().hex[:8]
    now = time.time_ns() - 60 * NS
    streams = [
        {
            "stream": {"service_name": "checkout", "env": "prod", "run": run},
            "values": [
                [
                    str(now + i * NS),
                    json.dumps(
                        {"level": "error" if i % 4 == 0 else "info", "latency_ms": 10 + i, "user": {"id": f"u{i % 3}"}}
                    ),
                    {"trace_id": f"t{i:04d}"},
                ]
                for i in range(40)
            ],
        },
        {
            "stream": {"service_name": "api", "env": "prod", "run": run},
            "values": [
                [str(now + i * NS), f"level=info method=GET status={200 if i % 5 else 500} duration={i}ms"]
                for i in range(40)
            ],
        },
    ]
    resp = httpx.post(
        svc.url + "/loki/api/v1/push",
        content=json.dumps({"streams": streams}),
        timeout=30,
        headers={"X-Scope-OrgID": TENANT, "Content-Type": "application/json"},
    )
    assert resp.status_code == 204, resp.text
    return {"run": run, "start": str(now - NS), "end": str(now + 60 * NS)}


def _get(svc, path: str, headers: dict | None = None, **params) -> httpx.Response:
    return httpx.get(svc.url + path, params=params, timeout=60, headers={"X-Scope-OrgID": TENANT, **(headers or {})})


def test_a_grafana_session(svc, pushed):
    window = {"start": pushed["start"], "end": pushed["end"]}
    selector = f'{{env="prod", run="{pushed["run"]}"}}'
    # the data source's health check
    health = _get(svc, "/loki/api/v1/query", query="vector(1)+vector(1)")
    assert health.status_code == 200 and health.json()["data"]["result"][0]["value"][1] == "2"
    # label browser
    assert {"service_name", "env", "run"} <= set(_get(svc, "/loki/api/v1/labels", **window).json()["data"])
    values = _get(svc, "/loki/api/v1/label/service_name/values", **window).json()["data"]
    assert {"checkout", "api"} <= set(values)
    # the logs volume histogram and Drilldown's service list
    histogram = _get(svc, "/loki/api/v1/index/volume_range", query=selector, step="60s", **window)
    assert histogram.status_code == 200 and histogram.json()["data"]["resultType"] == "matrix"
    services = _get(
        svc, "/loki/api/v1/index/volume", query=selector, targetLabels="service_name", aggregateBy="series", **window
    )
    assert {r["metric"].get("service_name") for r in services.json()["data"]["result"]} == {"checkout", "api"}
    # detected labels, fields and a field's values (bare objects, no envelope)
    labels = _get(svc, "/loki/api/v1/detected_labels", query=selector, **window).json()
    assert "service_name" in {item["label"] for item in labels["detectedLabels"]}
    fields = _get(
        svc, "/loki/api/v1/detected_fields", query=f'{{service_name="checkout", run="{pushed["run"]}"}}', **window
    ).json()
    by_name = {f["label"]: f for f in fields["fields"]}
    assert by_name["latency_ms"]["type"] == "int" and by_name["latency_ms"]["parsers"] == ["json"]
    assert by_name["trace_id"]["parsers"] is None  # structured metadata
    assert by_name["user_id"]["jsonPath"] == ["user", "id"]
    level_values = _get(
        svc,
        "/loki/api/v1/detected_field/level/values",
        query=f'{{service_name="checkout", run="{pushed["run"]}"}}',
        **window,
    ).json()
    assert sorted(level_values["values"]) == ["error", "info"]
    # patterns of a service
    patterns = _get(svc, "/loki/api/v1/patterns", query=f'{{service_name="api", run="{pushed["run"]}"}}', **window)
    assert patterns.status_code == 200
    # a categorized log query, as Drilldown sends it, tagged for the query log
    logs = _get(
        svc,
        "/loki/api/v1/query_range",
        query=f'{{service_name="checkout", run="{pushed["run"]}"}} | json',
        limit="5",
        direction="backward",
        **window,
        headers={
            "X-Loki-Response-Encoding-Flags": "categorize-labels",
            "X-Query-Tags": "Source=grafana-lokiexplore-app",
        },
    )
    data = logs.json()["data"]
    assert data["encodingFlags"] == ["categorize-labels"]
    entry = data["result"][0]["values"][0]
    assert entry[2]["structuredMetadata"]["trace_id"].startswith("t")
    assert entry[2]["parsed"]["level"] in ("error", "info")
    assert "level" not in data["result"][0]["stream"]  # stream labels kept apart from parsed ones


def test_logcli_detected_fields_call(svc, pushed):
    # logcli 3.x `detected-fields`: a GET with query, limits and the time range in nanoseconds
    resp = _get(
        svc,
        "/loki/api/v1/detected_fields",
        query=f'{{service_name="api", run="{pushed["run"]}"}}',
        limit="100",
        line_limit="1000",
        field_limit="1000",
        start=pushed["start"],
        end=pushed["end"],
        step="10s",
    )
    assert resp.status_code == 200, resp.text
    fields = {f["label"]: f for f in resp.json()["fields"]}
    assert fields["status"]["type"] == "int" and fields["status"]["parsers"] == ["logfmt"]
    assert fields["duration"]["type"] == "duration"


def test_the_same_calls_under_svc_with_the_svc_header(svc, pushed):
    window = {"start": pushed["start"], "end": pushed["end"]}
    limits = _get(svc, "/svc/api/v1/drilldown-limits").json()
    assert {"volume_enabled", "pattern_persistence_enabled", "discover_log_levels", "discover_service_name"} <= set(
        limits["limits"]
    )
    assert {"log_level_fields", "max_query_length"} <= set(limits["limits"])
    assert {"pattern_ingester_enabled", "version"} <= set(limits)
    selector = f'{{service_name="checkout", run="{pushed["run"]}"}}'
    labels = _get(svc, "/svc/api/v1/detected_labels", query=selector, **window).json()
    assert "env" in {item["label"] for item in labels["detectedLabels"]}
    fields = _get(svc, "/svc/api/v1/detected_fields", query=selector, **window).json()
    assert "latency_ms" in {f["label"] for f in fields["fields"]}
    values = _get(svc, "/svc/api/v1/detected_field/level/values", query=selector, **window).json()
    assert sorted(values["values"]) == ["error", "info"]
    logs = _get(
        svc,
        "/svc/api/v1/query_range",
        query=selector,
        limit="3",
        **window,
        headers={"X-Svc-Response-Encoding-Flags": "categorize-labels"},
    ).json()["data"]
    assert logs["encodingFlags"] == ["categorize-labels"]
    assert all(len(v) == 3 and "parsed" not in v[2] for s in logs["result"] for v in s["values"])


def test_live_tail_with_categorized_labels(svc, pushed):
    """Explore's live tail asking for categorized labels: the replay and a live entry carry their
    structured metadata and parsed labels apart from the stream labels, one stream per entry."""
    query = f'{{service_name="checkout", run="{pushed["run"]}"}} | json'
    url = svc.url.replace("http://", "ws://", 1) + "/loki/api/v1/tail?"
    url += urlencode({"query": query, "start": pushed["start"], "limit": "3"})
    stream_labels = {"service_name": "checkout", "env": "prod", "run": pushed["run"]}

    async def session() -> tuple[dict, dict]:
        headers = {"X-Scope-OrgID": TENANT, "X-Loki-Response-Encoding-Flags": "categorize-labels"}
        async with connect(url, additional_headers=headers, open_timeout=60) as ws:
            replay = json.loads(await asyncio.wait_for(ws.recv(), 30))
            line = json.dumps({"level": "warn", "latency_ms": 7, "user": {"id": "live"}})
            body = {
                "streams": [{"stream": stream_labels, "values": [[str(time.time_ns()), line, {"trace_id": "live"}]]}]
            }
            async with httpx.AsyncClient(timeout=30) as client:
                resp = await client.post(
                    svc.url + "/loki/api/v1/push",
                    content=json.dumps(body),
                    headers={"X-Scope-OrgID": TENANT, "Content-Type": "application/json"},
                )
                assert resp.status_code == 204, resp.text
            live = json.loads(await asyncio.wait_for(ws.recv(), 10))
        return replay, live

    replay, live = asyncio.run(session())
    for message in (replay, live):
        assert message["encodingFlags"] == ["categorize-labels"]
        for stream in message["streams"]:
            assert stream["stream"] == stream_labels  # neither metadata nor parsed labels
            assert len(stream["values"]) == 1
    assert len(replay["streams"]) == 3
    assert all(s["values"][0][2]["structuredMetadata"]["trace_id"].startswith("t") for s in replay["streams"])
    (entry,) = [s["values"][0] for s in live["streams"]]
    assert entry[2] == {
        "structuredMetadata": {"trace_id": "live"},
        "parsed": {"latency_ms": "7", "level": "warn", "user_id": "live"},
    }
