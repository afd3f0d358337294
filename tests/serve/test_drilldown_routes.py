"""The Logs Drilldown endpoints over ASGI with a plain backend: parameters, shapes, errors."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import httpx
import pytest

from svclog.config.limits import LimitsConfig, RetentionStream
from svclog.serve.app import Services
from svclog.serve.drilldown import published_limits
from tests.fuzz.harness import app_with

VOLUME_ON = replace(LimitsConfig(), volume_enabled=True)

RANGE = {"start": "1000000000000", "end": "2000000000000"}
STREAMS = [
    {
        "stream": {"app": "api"},
        "values": [
            ["3", '{"status":200,"user":{"tier":"gold"}}', {"structuredMetadata": {"trace": "t1"}}],
            ["2", "status=404 size=12KB", {"structuredMetadata": {"trace": "t2"}, "parsed": {"status": "404"}}],
            ["1", "plain text", {}],
        ],
    },
]


class Backend:
    def __init__(self):
        self.queries = []
        self.label_calls = []

    async def query(self, tenants, request, *routing):
        self.queries.append(request)
        return {"resultType": "streams", "result": STREAMS}

    async def label_names(self, tenants, start, end, query):
        self.label_calls.append(("names", query))
        return ["app", "request_id"]

    async def label_values(self, tenants, name, start, end, query):
        self.label_calls.append((name, query))
        return {"app": ["api", "db"], "request_id": ["1", "2", "3"]}[name]


def get(path, params=None, headers=None, **handler_options):
    backend = Backend()
    settings = {"limits_for": lambda tenant: VOLUME_ON, **handler_options}
    app = app_with(Services(backend=backend), auth_enabled=True, multi_tenant_queries=True, **settings)

    async def send():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svclog") as client:
            return await client.get(
                path, params=params or {}, headers={"X-Scope-OrgID": "t"} if headers is None else headers
            )

    return asyncio.run(send()), backend


@pytest.mark.parametrize("prefix", ["/svc", "/loki"])
def test_detected_labels_are_a_bare_object(prefix):
    response, backend = get(prefix + "/api/v1/detected_labels", {"query": '{app=~".+"}', **RANGE})
    assert response.status_code == 200
    assert response.json() == {"detectedLabels": [{"label": "app", "cardinality": 2}]}  # ids left out
    assert ("app", '{app=~".+"}') in backend.label_calls


def test_detected_labels_refuse_pipelines():
    for query in ('{app="api"} |= "x"', '{app="api"} | json'):
        response, backend = get("/svc/api/v1/detected_labels", {"query": query, **RANGE})
        assert (response.status_code, response.text) == (400, "only label matchers are supported")
        assert backend.label_calls == []
    response, _ = get("/svc/api/v1/detected_labels", {"query": "{app=", **RANGE})
    assert response.status_code == 400 and response.text.startswith("parse error")
    response, _ = get("/svc/api/v1/detected_labels", {"start": "20", "end": "10"})
    assert response.status_code == 400 and "end timestamp must not be before" in response.text


def test_detected_fields_sample_newest_lines_with_categorized_labels():
    params = {"query": '{app="api"}', "line_limit": "50", "limit": "10", "direction": "forward", **RANGE}
    response, backend = get("/loki/api/v1/detected_fields", params)
    assert response.status_code == 200
    request = backend.queries[0]
    assert (request.limit, request.direction, request.categorize_labels) == (50, "backward", True)
    body = response.json()
    assert body["limit"] == 10
    fields = {f["label"]: f for f in body["fields"]}
    assert fields["trace"] == {"label": "trace", "type": "string", "cardinality": 2, "parsers": None}
    assert fields["status"]["parsers"] == ["json", "logfmt"] and fields["status"]["cardinality"] == 2
    assert fields["user_tier"]["jsonPath"] == ["user", "tier"]
    assert fields["size"]["type"] == "bytes"


def test_detected_fields_defaults_and_errors():
    response, backend = get("/svc/api/v1/detected_fields", {"query": '{app="api"}', **RANGE})
    assert backend.queries[0].limit == 100 and response.json()["limit"] == 1000
    response, _ = get("/svc/api/v1/detected_fields", {"query": '{app="api"}', "field_limit": "7", **RANGE})
    assert response.json()["limit"] == 7
    for bad in ({"line_limit": "0"}, {"limit": "-1"}):
        response, backend = get("/svc/api/v1/detected_fields", {"query": '{app="api"}', **bad, **RANGE})
        assert (response.status_code, response.text) == (400, "limit must be a positive value")
        assert backend.queries == []
    response, _ = get("/svc/api/v1/detected_fields", {"query": 'rate({app="api"}[1m])', **RANGE})
    assert (response.status_code, response.text) == (400, "only log selector is supported")


def test_detected_field_values():
    response, _ = get("/svc/api/v1/detected_field/size/values", {"query": '{app="api"}', **RANGE})
    assert response.json() == {"values": ["12kB"], "limit": 1000}
    response, _ = get("/svc/api/v1/detected_field/trace/values", {"query": '{app="api"}', **RANGE})
    assert sorted(response.json()["values"]) == ["t1", "t2"]
    response, _ = get("/svc/api/v1/detected_field/nothing/values", {"query": '{app="api"}', **RANGE})
    assert response.json() == {}


def test_drilldown_limits():
    limits = replace(LimitsConfig(), volume_enabled=False, max_query_length=721 * 3600 * 10**9)
    response, _ = get("/svc/api/v1/drilldown-limits", limits_for=lambda tenant: limits, pattern_ingester_enabled=True)
    body = response.json()
    assert body["pattern_ingester_enabled"] is True and isinstance(body["version"], str)
    assert body["limits"]["volume_enabled"] is False
    assert body["limits"]["max_query_length"] == "30d1h"
    response, _ = get("/loki/api/v1/drilldown-limits", headers={})
    assert response.status_code == 401


def test_published_limits_are_the_allowlist_in_json_form():
    limits = replace(
        LimitsConfig(),
        retention_stream=(RetentionStream('{a="b"}', 1, 24 * 3600 * 10**9),),
        otlp_config={"resource_attributes": {"attributes_config": [{"action": "drop", "attributes": ["x"]}]}},
    )
    out = published_limits(limits, ("service.name",))
    assert set(out) == {
        "discover_log_levels",
        "discover_service_name",
        "log_level_fields",
        "max_entries_limit_per_query",
        "max_line_size_truncate",
        "max_query_bytes_read",
        "max_query_length",
        "max_query_lookback",
        "max_query_range",
        "max_query_series",
        "metric_aggregation_enabled",
        "otlp_config",
        "pattern_persistence_enabled",
        "query_timeout",
        "retention_period",
        "retention_stream",
        "volume_enabled",
        "volume_max_series",
    }
    assert out["query_timeout"] == "1m" and out["retention_period"] == "0s" and out["max_query_bytes_read"] == 0
    assert out["retention_stream"] == [{"selector": '{a="b"}', "priority": 1, "period": "1d"}]
    assert out["otlp_config"]["resource_attributes"]["attributes_config"] == [
        {"action": "index_label", "attributes": ["service.name"]},
        {"action": "drop", "attributes": ["x"]},
    ]
    assert "retention_stream" not in published_limits(LimitsConfig(), ())
