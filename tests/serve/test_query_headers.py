"""Encoding flags and X-Query-Tags: parsing, the `encodingFlags` echo, the query log line,
and a categorize-labels log query over the real handlers and querier (no Ray)."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import UTC, datetime

import httpx

from svclog.model import NS, now_ns
from svclog.querier.request import RangeRequest
from svclog.serve.query_headers import encoding_flags, query_tags, tag_pairs, with_encoding_flags
from svclog.serve.query_log import query_log_line
from tests.fuzz.harness import InProcessBackend, build_app, harness_config

MINUTE = 60 * NS
START = (now_ns() // MINUTE - 30) * MINUTE  # recent enough to be accepted, on a minute boundary


def rfc3339(ns: int) -> str:
    return datetime.fromtimestamp(ns // NS, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_encoding_flags_from_either_header():
    assert encoding_flags({"X-Svc-Response-Encoding-Flags": "categorize-labels"}) == ("categorize-labels",)
    assert encoding_flags({"X-Loki-Response-Encoding-Flags": "a,b,a"}) == ("a", "b")
    assert encoding_flags({}) == () and encoding_flags({"X-Loki-Response-Encoding-Flags": ""}) == ()


def test_encoding_flags_echo_only_on_log_results():
    logs = {"resultType": "streams", "result": [], "stats": {}}
    assert list(with_encoding_flags(logs, ("categorize-labels",))) == ["resultType", "encodingFlags", "result", "stats"]
    matrix = {"resultType": "matrix", "result": []}
    assert with_encoding_flags(matrix, ("categorize-labels",)) is matrix
    assert with_encoding_flags(logs, ()) is logs


def test_query_tags_are_sanitised_and_paired():
    tags = query_tags({"X-Query-Tags": "Source=grafana-lokiexplore-app,Feature=beta!x,junk,a=b=c"})
    assert tags == "Source=grafana-lokiexplore-app,Feature=beta_x,junk,a=b=c"
    assert tag_pairs(tags) == [("source", "grafana-lokiexplore-app"), ("feature", "beta_x")]


def test_query_log_line_names_query_status_and_tags():
    request = RangeRequest('{app="a"} |= "x y"', START, START + 3600 * NS, 60 * NS, None, 10, "backward")
    data = {"resultType": "streams", "result": [{"stream": {}, "values": [["1", "a"], ["2", "b"]]}]}
    line = query_log_line(["t1", "t2"], request, 200, 0.25, data, "Source=grafana")
    assert line.startswith(
        'msg=query org_id=t1|t2 query="{app=\\"a\\"} |= \\"x y\\"" range_type=range length=1h0m0s '
        "step=1m0s limit=10 duration=250ms status=200 returned_lines=2"
    )
    assert line.endswith(" source=grafana")
    assert query_log_line([], None, 400, 0.0, None, "") == 'msg=query org_id="" duration=0s status=400'


def _push_and_query(tmp_path, caplog, headers: dict, **params) -> httpx.Response:
    backend = InProcessBackend(harness_config(str(tmp_path)), str(tmp_path))
    app = build_app(backend)
    body = {
        "streams": [
            {
                "stream": {"app": "a"},
                "values": [
                    [str(START + NS), '{"msg":"one"}', {"trace_id": "t1"}],
                    [str(START + 2 * NS), '{"msg":"two"}'],
                ],
            }
        ]
    }

    async def send():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svclog") as client:
            pushed = await client.post(
                "/loki/api/v1/push",
                content=json.dumps(body),
                headers={"X-Scope-OrgID": "t", "Content-Type": "application/json"},
            )
            assert pushed.status_code == 204, pushed.text
            return await client.get(
                "/loki/api/v1/query_range", params=params, headers={"X-Scope-OrgID": "t", **headers}
            )

    with caplog.at_level(logging.INFO, logger="svclog.query"):
        return asyncio.run(send())


def test_categorized_log_query_over_http(tmp_path, caplog):
    headers = {"X-Loki-Response-Encoding-Flags": "categorize-labels", "X-Query-Tags": "Source=grafana"}
    response = _push_and_query(
        tmp_path,
        caplog,
        headers,
        query='{app="a"} | json',
        start=str(START),
        end=str(START + 60 * NS),
        direction="forward",
        step="60000ms",
    )
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert data["encodingFlags"] == ["categorize-labels"]
    assert data["result"] == [
        {
            "stream": {"app": "a"},
            "values": [
                # level discovery is on by default: lines without a level get detected_level=unknown at ingest
                [
                    str(START + NS),
                    '{"msg":"one"}',
                    {"structuredMetadata": {"trace_id": "t1", "detected_level": "unknown"}, "parsed": {"msg": "one"}},
                ],
                [
                    str(START + 2 * NS),
                    '{"msg":"two"}',
                    {"structuredMetadata": {"detected_level": "unknown"}, "parsed": {"msg": "two"}},
                ],
            ],
        }
    ]
    assert any("source=grafana" in r.getMessage() and "status=200" in r.getMessage() for r in caplog.records)


def test_rfc3339_times_and_millisecond_step(tmp_path, caplog):
    headers = {"X-Svc-Response-Encoding-Flags": "categorize-labels"}
    response = _push_and_query(
        tmp_path,
        caplog,
        headers,
        query='sum(count_over_time({app="a"}[1m]))',
        start=rfc3339(START),
        end=rfc3339(START + MINUTE).replace("Z", ".000000000Z"),
        step="60000ms",
    )
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert "encodingFlags" not in data  # metric results never carry the flags
    assert data["result"][0]["values"] == [[(START + MINUTE) // NS, "2"]]  # no sample at START: no point


def test_query_log_gets_a_stderr_handler_only_where_no_host_configured_logging(monkeypatch):
    from svclog.serve import query_log

    monkeypatch.setattr(logging.getLogger(), "handlers", [])  # a Serve replica: nothing configured
    monkeypatch.setattr(query_log.log, "handlers", [])
    query_log.ensure_output()
    assert [type(h) for h in query_log.log.handlers] == [logging.StreamHandler]
    monkeypatch.setattr(logging.getLogger(), "handlers", [logging.NullHandler()])  # the host's own
    monkeypatch.setattr(query_log.log, "handlers", [])
    query_log.ensure_output()
    assert query_log.log.handlers == []
