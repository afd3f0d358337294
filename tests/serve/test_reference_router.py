"""The gateway answers the router-level and tenant corners as the reference does (issue 12),
checked over the Ray-free harness: trailing slashes, methods a path does not take, the tenant
errors of the query and Drilldown routes, the virtual tenant label of multi-tenant reads, and
structured metadata with an empty name."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from svclog.model import Entry, Labels, PushStream, now_ns
from svclog.serve.codecs.push import encode_push_protobuf
from svclog.serve.routes import CLEARED_METHODS, ROUTES, row_paths
from tests.fuzz.harness import InProcessBackend, build_app, harness_config

NOT_FOUND = (404, b"404 page not found\n")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("router"))
    cfg = harness_config(root, "-pattern-ingester.enabled=true", "-ruler.enable-api=true")
    return build_app(InProcessBackend(cfg, root))


def send(app, method: str, path: str, tenant: str | None = "a", **kwargs) -> httpx.Response:
    headers = kwargs.pop("headers", {})
    if tenant is not None:
        headers["X-Scope-OrgID"] = tenant

    async def go():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.request(method, path, headers=headers, **kwargs)

    return asyncio.run(go())


@pytest.mark.parametrize(
    "path", ["/loki/api/v1/labels/", "/svc/api/v1/query_range/", "/loki/api/v1/rules/", "/loki/api/v1/rules/ns/g/"]
)
def test_a_trailing_slash_is_another_path(app, path):
    for method in ("GET", "POST", "DELETE", "PUT"):
        response = send(app, method, path)
        assert (response.status_code, response.content) == NOT_FOUND, (method, path)


@pytest.mark.parametrize("path", ["/loki/api/v1/push", "/otlp/v1/logs", "/flush", "/loki/api/v1/query_range", "/ring"])
def test_delete_on_a_route_registered_before_the_ingesters_is_404(app, path):
    assert (lambda r: (r.status_code, r.content))(send(app, "DELETE", path)) == NOT_FOUND


@pytest.mark.parametrize(
    "method,path",
    [
        ("PUT", "/loki/api/v1/push"),
        ("PATCH", "/otlp/v1/logs"),
        ("PUT", "/flush"),
        ("DELETE", "/ingester/shutdown"),  # nothing after the ingester's routes takes DELETE
        ("POST", "/ready"),  # the server's own routes come last: always 405
        ("DELETE", "/loki/api/v1/status/buildinfo"),
        ("DELETE", "/loki/api/v1/drilldown-limits"),
        ("OPTIONS", "/loki/api/v1/label/app/values"),
    ],
)
def test_other_mismatched_methods_are_an_empty_405_without_allow(app, method, path):
    response = send(app, method, path)
    assert (response.status_code, response.content) == (405, b""), (method, path)
    assert "allow" not in response.headers


def test_the_cleared_methods_follow_the_table_order():
    # every component route loses GET/POST/DELETE mismatches to the ingester's methods-first routes
    assert CLEARED_METHODS["/loki/api/v1/push"] == {"GET", "POST", "DELETE"}
    assert CLEARED_METHODS["/flush"] == {"GET", "POST", "DELETE"}  # prepare_shutdown comes after it
    assert CLEARED_METHODS["/ingester/shutdown"] == frozenset()
    last_methods_first = max(i for i, row in enumerate(ROUTES) if row.methods_first)
    for row in ROUTES[last_methods_first + 1 :]:
        for path in row_paths(row):
            assert CLEARED_METHODS.get(path, frozenset()) == frozenset(), path


def test_metrics_and_tail_take_the_methods_the_reference_takes(app):
    for method in ("POST", "DELETE", "PUT"):
        assert send(app, method, "/metrics").status_code == 200
    response = send(app, "POST", "/loki/api/v1/tail")
    assert response.status_code == 400 and response.text  # no query: the GET's validation


@pytest.mark.parametrize("tenant", ["a|b", "a|", "..", "a/b"])
def test_drilldown_limits_refuses_every_tenant_error_as_unauthorized(app, tenant):
    response = send(app, "GET", "/loki/api/v1/drilldown-limits", tenant=tenant)
    assert response.status_code == 401 and response.text.endswith("\n")


def test_tenant_error_bodies_of_the_query_routes(app):
    missing = send(app, "GET", "/loki/api/v1/labels", tenant=None)
    assert (missing.status_code, missing.text) == (401, "no org id\n")
    for path in (
        "/loki/api/v1/labels",
        "/loki/api/v1/series?match[]={a=%22b%22}",
        "/loki/api/v1/patterns?query={a=%22b%22}",
    ):
        response = send(app, "GET", path, tenant="..")
        assert (response.status_code, response.text) == (400, "tenant ID is '.' or '..'"), path
    forwarded = "rpc error: code = Code(400) desc = tenant ID 'a/b' contains unsupported character '/'"
    for path in ("/loki/api/v1/query_range?query={a=%22b%22}", "/loki/api/v1/detected_fields?query={a=%22b%22}"):
        response = send(app, "GET", path, tenant="a/b")
        assert (response.status_code, response.text) == (400, forwarded), path


def test_multi_tenant_reads_name_the_virtual_tenant_label(app):
    names = send(app, "GET", "/loki/api/v1/labels", tenant="b|a")
    assert names.json()["data"] == ["__tenant_id__"]
    single = send(app, "GET", "/loki/api/v1/labels", tenant="a")
    assert "__tenant_id__" not in single.json()["data"]
    for tenant, expected in [("b|a|a", ["a", "b"]), ("a|", ["", "a"]), ("a", ["a"])]:
        values = send(app, "GET", "/loki/api/v1/label/__tenant_id__/values", tenant=tenant)
        assert values.json()["data"] == expected, tenant
    patterns = send(app, "GET", "/loki/api/v1/patterns?query={a=%22b%22}", tenant="a|")
    assert (patterns.status_code, patterns.json()["data"]) == (200, [])


def _json_push(metadata: dict) -> tuple[str, bytes, dict]:
    body = {"streams": [{"stream": {"app": "sm"}, "values": [[str(now_ns()), "line", metadata]]}]}
    return "/loki/api/v1/push", json.dumps(body).encode(), {"Content-Type": "application/json"}


def _protobuf_push(metadata: tuple) -> tuple[str, bytes, dict]:
    body = encode_push_protobuf([PushStream(Labels.from_dict({"app": "sm"}), [Entry(now_ns(), "line", metadata)])])
    return "/loki/api/v1/push", body, {"Content-Type": "application/x-protobuf"}


def _otlp_push(key: str) -> tuple[str, bytes, dict]:
    record = {
        "timeUnixNano": str(now_ns()),
        "body": {"stringValue": "line"},
        "attributes": [{"key": key, "value": {"stringValue": "v"}}],
    }
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "sm"}}]}
    body = {"resourceLogs": [{"resource": resource, "scopeLogs": [{"logRecords": [record]}]}]}
    return "/otlp/v1/logs", json.dumps(body).encode(), {"Content-Type": "application/json"}


@pytest.mark.parametrize(
    "request_parts,message",
    [
        (_json_push({"": "v"}), "label name is empty\n"),
        (_json_push({"": "", "k": "v"}), "label name is empty\n"),  # refused even with an empty value
        (_protobuf_push((("", "v"),)), "label name is empty\n"),
        (_otlp_push(""), "symbolizer lookup: label name is empty\n"),
    ],
)
def test_structured_metadata_with_an_empty_name_fails_the_push(app, request_parts, message):
    path, body, headers = request_parts
    response = send(app, "POST", path, tenant="sm-empty", content=body, headers=headers)
    assert (response.status_code, response.text) == (400, message)
    stored = send(app, "GET", "/loki/api/v1/labels", tenant="sm-empty")
    assert stored.json()["data"] == []  # nothing of the push was kept


def test_a_named_attribute_is_accepted(app):
    path, body, headers = _otlp_push("ok")
    assert send(app, "POST", path, tenant="sm-ok", content=body, headers=headers).status_code == 200


def test_series_without_match_lists_every_series(app):
    body = {"streams": [{"stream": {"app": "s1"}, "values": [[str(now_ns()), "x"]]}]}
    headers = {"Content-Type": "application/json"}
    assert send(app, "POST", "/loki/api/v1/push", tenant="series-all", json=body, headers=headers).status_code == 204
    for path in ("/loki/api/v1/series", "/api/prom/series"):
        response = send(app, "GET", path, tenant="series-all")
        assert (response.status_code, response.json()["data"]) == (200, [{"app": "s1"}]), path
    empty = send(app, "GET", "/loki/api/v1/series?match[]=", tenant="series-all")
    assert empty.status_code == 400  # an empty selector is still a parse error


EMPTY_QUERY = "parse error : syntax error: unexpected $end"


@pytest.mark.parametrize(
    "path",
    [
        "/loki/api/v1/query_range",
        "/loki/api/v1/query",
        "/loki/api/v1/index/stats",
        "/loki/api/v1/index/volume",
        "/loki/api/v1/index/volume_range",
        "/loki/api/v1/patterns",
        "/loki/api/v1/detected_fields",
        "/loki/api/v1/tail",
        "/api/prom/query",
    ],
)
def test_a_missing_query_is_parsed_as_the_empty_one(app, path):
    response = send(app, "GET", path)
    assert (response.status_code, response.text) == (400, EMPTY_QUERY), path


def test_format_query_answers_its_own_json_for_a_query_that_does_not_parse(app):
    response = send(app, "GET", "/loki/api/v1/format_query")
    assert response.status_code == 400 and response.json() == {"status": "invalid-query", "error": EMPTY_QUERY}
    response = send(app, "GET", "/loki/api/v1/format_query?query={a=")
    assert response.json() == {
        "status": "invalid-query",
        "error": "parse error at line 1, col 4: syntax error: unexpected $end, expecting STRING",
    }
