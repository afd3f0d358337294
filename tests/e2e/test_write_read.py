"""End to end over real HTTP: push in every encoding, read back, flush, isolation, bad input."""

from __future__ import annotations

import gzip
import hashlib
import json
import time

import httpx
import pytest

from svclog.model import Entry, Labels, PushStream
from svclog.serve.codecs.push import encode_push_protobuf
from tests.e2e.runtime_overrides import add_overrides

pytestmark = pytest.mark.ray
BASE = 1_793_491_200 * 10**9  # 2026-11-01T00:00:00Z


def _query(svc, tenant, query, **params):
    params = {"query": query, "start": str(BASE), "end": str(BASE + 7200 * 10**9), **params}
    resp = httpx.get(svc.url + "/svc/api/v1/query_range", params=params, headers={"X-Scope-OrgID": tenant}, timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]


def _lines(data):
    return [v[1] for stream in data["result"] for v in stream["values"]]


def _push_json(svc, tenant, streams, **kw):
    body = json.dumps({"streams": streams}).encode()
    headers = {"X-Scope-OrgID": tenant, "Content-Type": "application/json"}
    if kw.get("gzip"):
        body = gzip.compress(body)
        headers["Content-Encoding"] = "gzip"
    return httpx.post(svc.url + "/loki/api/v1/push", content=body, headers=headers, timeout=30)


def test_json_gzip_and_protobuf_pushes_read_back(svc):
    resp = _push_json(
        svc,
        "e2e-a",
        [
            {
                "stream": {"app": "web", "env": "prod"},
                "values": [[str(BASE + 1), "GET /index 200"], [str(BASE + 2), "GET /login 500", {"trace_id": "abc"}]],
            }
        ],
    )
    assert resp.status_code == 204, resp.text
    assert (
        _push_json(
            svc,
            "e2e-a",
            [{"stream": {"app": "web", "env": "dev"}, "values": [[str(BASE + 3), "gzipped ünïcødé"]]}],
            gzip=True,
        ).status_code
        == 204
    )
    proto = encode_push_protobuf([PushStream(Labels({"app": "db"}.items()), [Entry(BASE + 4, "proto line")])])
    resp = httpx.post(
        svc.url + "/svc/api/v1/push",
        content=proto,
        timeout=30,
        headers={"X-Scope-OrgID": "e2e-a", "Content-Type": "application/x-protobuf"},
    )
    assert resp.status_code == 204, resp.text

    data = _query(svc, "e2e-a", '{app=~"web|db"}', direction="forward")
    assert data["resultType"] == "streams"
    assert _lines(data) and sorted(_lines(data)) == sorted(
        ["GET /index 200", "GET /login 500", "gzipped ünïcødé", "proto line"]
    )
    assert set(data["stats"]) == {"ingester", "store", "summary"}
    assert data["stats"]["summary"]["totalLinesProcessed"] >= 4
    # structured metadata comes back as labels of the entry's stream
    (with_md,) = [s for s in data["result"] if "trace_id" in s["stream"]]
    assert with_md["stream"] == {"app": "web", "env": "prod", "trace_id": "abc"}
    assert _lines(_query(svc, "e2e-a", '{app="web"} |= "500"')) == ["GET /login 500"]
    assert sorted(_lines(_query(svc, "e2e-a", '{app="web"} != "500" |~ "ünï|index"'))) == [
        "GET /index 200",
        "gzipped ünïcødé",
    ]


def test_labels_series_and_tenant_isolation(svc):
    _push_json(svc, "e2e-b", [{"stream": {"app": "iso", "team": "b"}, "values": [[str(BASE + 10), "b only"]]}])
    hdr = {"X-Scope-OrgID": "e2e-b"}
    labels = httpx.get(
        svc.url + "/svc/api/v1/labels", params={"start": str(BASE), "end": str(BASE + 10**12)}, headers=hdr
    ).json()
    assert labels == {"status": "success", "data": ["app", "team"]}
    values = httpx.get(
        svc.url + "/svc/api/v1/label/app/values", params={"start": str(BASE), "end": str(BASE + 10**12)}, headers=hdr
    ).json()
    assert values["data"] == ["iso"]
    series = httpx.post(
        svc.url + "/svc/api/v1/series",
        headers=hdr,
        data={"match[]": ['{app="iso"}', '{team="b"}'], "start": str(BASE), "end": str(BASE + 10**12)},
    ).json()
    assert series["data"] == [{"app": "iso", "team": "b"}]
    other = {"X-Scope-OrgID": "e2e-other"}
    assert _lines(_query(svc, "e2e-other", '{app="iso"}')) == []
    assert (
        httpx.get(
            svc.url + "/svc/api/v1/labels", headers=other, params={"start": str(BASE), "end": str(BASE + 10**12)}
        ).json()["data"]
        == []
    )


def test_flush_moves_data_to_the_store_and_it_stays_queryable(svc):
    _push_json(
        svc, "e2e-c", [{"stream": {"app": "flushme"}, "values": [[str(BASE + i), f"entry {i}"] for i in range(50)]}]
    )
    assert httpx.post(svc.url + "/flush", timeout=60).status_code == 204
    metrics = httpx.get(svc.url + "/metrics").text
    assert "svc_ingester_flush_queue_length 0.0" in metrics  # all uploaded (retained a while for queries)
    assert "svc_distributor_lines_received_total" in metrics
    data = _query(svc, "e2e-c", '{app="flushme"}', limit="1000")
    assert len(_lines(data)) == 50  # replicas de-duplicated, nothing lost
    # the ingesters keep uploaded chunks a few seconds (answering for those files meanwhile);
    # once they hold none, the same query is answered from the store alone
    deadline = time.monotonic() + 60
    while "svc_ingester_memory_chunks 0.0" not in httpx.get(svc.url + "/metrics").text:
        assert time.monotonic() < deadline, "the ingesters still hold chunks a minute after the flush"
        time.sleep(0.5)
    data = _query(svc, "e2e-c", '{app="flushme"}', limit="1000")
    assert len(_lines(data)) == 50
    assert data["stats"]["store"]["totalChunksDownloaded"] + data["stats"]["store"]["totalChunksRef"] >= 1


@pytest.mark.parametrize(
    "headers,body,status",
    [
        ({}, b'{"streams": []}', 401),
        ({"X-Scope-OrgID": "a|b"}, b'{"streams": []}', 400),
        ({"X-Scope-OrgID": ".."}, b'{"streams": []}', 400),
        ({"X-Scope-OrgID": "t"}, b'{"streams": [', 400),
        ({"X-Scope-OrgID": "t"}, b'{"streams":[{"stream":{"a":"b"},"values":[[1, "numeric ts"]]}]}', 400),
        ({"X-Scope-OrgID": "t", "Content-Type": "application/x-protobuf"}, b"\xff\x00garbage", 400),
    ],
)
def test_bad_pushes_get_4xx(svc, headers, body, status):
    headers = {"Content-Type": "application/json", **headers}
    resp = httpx.post(svc.url + "/svc/api/v1/push", content=body, headers=headers, timeout=30)
    assert resp.status_code == status, resp.text
    assert resp.text.strip()


def test_query_errors_are_400(svc):
    hdr = {"X-Scope-OrgID": "t"}
    assert httpx.get(svc.url + "/svc/api/v1/query_range", params={"query": '{app="x"'}, headers=hdr).status_code == 400
    assert httpx.get(svc.url + "/svc/api/v1/query", params={"query": '{app="x"}'}, headers=hdr).status_code == 400
    assert (
        httpx.get(
            svc.url + "/svc/api/v1/query_range", params={"query": '{a="b"}', "step": "0"}, headers=hdr
        ).status_code
        == 400
    )
    # no match[] lists every series (as the reference does); an empty one does not parse
    assert httpx.get(svc.url + "/svc/api/v1/series", params={"match[]": ""}, headers=hdr).status_code == 400


def test_status_endpoints(svc):
    assert httpx.get(svc.url + "/ready").text.strip() == "ready"
    info = httpx.get(svc.url + "/svc/api/v1/status/buildinfo").json()
    assert set(info) == {"version", "revision", "branch", "buildDate", "buildUser", "goVersion"}
    assert "Running" in httpx.get(svc.url + "/services").text
    assert "server:" in httpx.get(svc.url + "/config").text


def _local_queries(svc) -> float:
    text = httpx.get(svc.url + "/metrics", timeout=30).text
    return next(
        float(line.split()[1])
        for line in text.splitlines()
        if line.startswith("svc_query_frontend_local_queries_total ")
    )


def test_a_small_query_runs_in_the_frontend_with_the_queriers_answer(svc):
    """A query reading little runs in the query frontend's own process (counted in /metrics); the
    same query of a tenant whose local lane is off goes through the scheduler and a querier."""
    add_overrides(svc, {"e2e-lane-off": {"local_query_max_bytes": 0}})
    values = [[str(BASE + i * 10**9), f"small line {i} level={'warn' if i % 2 else 'info'}"] for i in range(20)]
    for tenant in ("e2e-lane-on", "e2e-lane-off"):
        assert _push_json(svc, tenant, [{"stream": {"app": "small"}, "values": values}]).status_code == 204
    for query in ['{app="small"} |= "warn"', 'sum by (level) (count_over_time({app="small"} | logfmt [10m]))']:
        before = _local_queries(svc)
        here = _query(svc, "e2e-lane-on", query, step="60")
        assert _local_queries(svc) == before + 1
        there = _query(svc, "e2e-lane-off", query, step="60")
        assert _local_queries(svc) == before + 1
        here.pop("stats")
        there.pop("stats")
        assert here == there and here["result"], query


PADDING = "msg=request served to the client after checking its session, its quota and its rate"


def test_a_needle_over_flushed_chunks_runs_in_the_frontend(svc):
    """The flush writes its chunks' layouts beside its index segment; the frontend's planning
    read learns them and finds that a needle leaves ~one block of ~2.5 MB to read, so it runs the
    query itself (counted in /metrics), while a filter the token index cannot decide goes to the
    queriers. Both answers are whole."""
    per_stream = 4000
    ids = [hashlib.sha1(f"{s}/{i}".encode()).hexdigest() for s in range(4) for i in range(per_stream)]

    def line(stream: int, i: int) -> str:
        return f"level=info stream={stream} trace_id={ids[stream * per_stream + i]} took={i % 97}ms {PADDING}"

    for stream in range(4):
        values = [[str(BASE + i * 10**9), line(stream, i)] for i in range(per_stream)]
        pushed = _push_json(svc, "e2e-needle", [{"stream": {"app": "needle", "s": str(stream)}, "values": values}])
        assert pushed.status_code == 204, pushed.text
    assert httpx.post(svc.url + "/flush", timeout=60).status_code == 204
    deadline = time.monotonic() + 60  # until the store alone holds them (and every listing shows them)
    while "svc_ingester_memory_chunks 0.0" not in httpx.get(svc.url + "/metrics").text:
        assert time.monotonic() < deadline, "the ingesters still hold chunks a minute after the flush"
        time.sleep(0.5)
    before = _local_queries(svc)
    data = _query(svc, "e2e-needle", f'{{app="needle"}} |= "{ids[2 * per_stream + 1234]}"', limit="100")
    assert _lines(data) == [line(2, 1234)]
    assert _local_queries(svc) == before + 1
    assert data["stats"]["store"]["blocksSkippedByTokenIndex"] > 0
    data = _query(svc, "e2e-needle", '{app="needle"} |= "took=5ms"', limit="1000")
    assert len(_lines(data)) == 4 * len(range(5, per_stream, 97))
    assert _local_queries(svc) == before + 1  # ~2.5 MB to read: the queriers'
